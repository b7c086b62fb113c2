package lisp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestScratchEval evaluates the forms in $LISP_SCRATCH (one per line).
func TestScratchEval(t *testing.T) {
	src := os.Getenv("LISP_SCRATCH")
	if src == "" {
		return
	}
	for _, line := range strings.Split(src, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		res, err := Exec(context.Background(), line, Options{})
		var e *Error
		if errors.As(err, &e) {
			fmt.Printf("%s => ERR %s: %s\n", line, e.Reason(), e.Error())
			continue
		}
		fmt.Printf("%s => %s\n", line, Sprint(res.Value, PrintOptions{NoFirewall: true}))
	}
}

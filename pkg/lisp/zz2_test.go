package lisp

import (
	"context"
	"os"
	"testing"
	"time"
)

func TestZZOne(t *testing.T) {
	start := time.Now()
	v, err := Exec(context.Background(), os.Getenv("SRC"), Options{Timeout: 10 * time.Second, MaxMemory: -1})
	t.Logf("%v %v %v", time.Since(start), PrStr(v.Value), err)
}

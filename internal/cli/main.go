package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Main runs a binary: run gets a context that SIGINT and SIGTERM cancel;
// flag.ErrHelp (-h, whose usage is printed already) exits 0; another
// error is printed as "name: error", and the process exits with
// code(err), or 1 when code is nil.
func Main(name string, run func(ctx context.Context) error, code func(error) int) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx)
	stop()
	if err != nil {
		os.Exit(exit(os.Stderr, name, err, code))
	}
}

// exit reports err of the binary name on w and returns its exit code.
func exit(w io.Writer, name string, err error, code func(error) int) int {
	if errors.Is(err, flag.ErrHelp) {
		return 0 // -h asked for the usage, which is printed
	}
	fmt.Fprintln(w, name+":", err)
	if code == nil {
		return 1
	}
	return code(err)
}

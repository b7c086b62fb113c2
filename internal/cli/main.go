package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/ptcfleet/ptc/internal/version"
)

// Main runs a binary: run gets a context that SIGINT and SIGTERM cancel;
// flag.ErrHelp (-h, whose usage is printed already) exits 0; another
// error is printed as "name: error", and the process exits with
// code(err), or 1 when code is nil.
//
// -version (or --version) as the only argument prints the version line
// (PrintVersion) on stdout and exits 0 without running.
func Main(name string, run func(ctx context.Context) error, code func(error) int) {
	if AskedVersion(os.Args[1:]) {
		PrintVersion(os.Stdout, name)
		return
	}
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

// AskedVersion reports whether args ask for the version alone (-version
// or --version, as the only argument), which a binary prints with
// PrintVersion before reading any other flag or variable. It is not a
// flag of the binaries' flag sets, so it has no environment twin.
func AskedVersion(args []string) bool {
	return len(args) == 1 && (args[0] == "-version" || args[0] == "--version")
}

// PrintVersion writes the binary name's version line: the name, the
// project's version as built (version.String) and the Go release.
func PrintVersion(w io.Writer, name string) {
	fmt.Fprintf(w, "%s %s %s\n", name, version.String(), runtime.Version())
}

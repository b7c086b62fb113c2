// Package testnode lets Go tests run Node.js programs whose npm packages
// the project installs (a committed package-lock.json; .ci/run runs
// npm ci). Node is required, not optional: a test that needs it fails,
// saying how to install what is missing.
package testnode

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Folder returns the absolute path of dir, a folder with a package.json
// whose packages are installed, or fails tb with the commands that install
// Node and the packages.
func Folder(tb testing.TB, dir string) string {
	tb.Helper()
	abs, err := filepath.Abs(dir)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := exec.LookPath("node"); err != nil {
		tb.Fatalf("node is not installed; install it (Debian: apt-get install -y nodejs npm), then run: npm ci --prefix %s", abs)
	}
	if _, err := os.Stat(filepath.Join(abs, "node_modules")); err != nil {
		tb.Fatalf("the npm packages of %s are not installed; run: npm ci --prefix %s (scripts/test-deps.sh does)", dir, abs)
	}
	return abs
}

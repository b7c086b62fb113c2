package syncbuf

import (
	"strings"
	"sync"
	"testing"
)

// TestConcurrentWritesAndReads: writers and a reader at once (run with
// -race) lose no byte, and String returns all that was written.
func TestConcurrentWritesAndReads(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				if _, err := b.Write([]byte("ab")); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 100 {
			if s := b.String(); len(s)%2 != 0 {
				t.Errorf("read a torn write: %d bytes", len(s))
			}
		}
	}()
	wg.Wait()
	<-done
	if got := b.String(); got != strings.Repeat("ab", 400) {
		t.Errorf("got %d bytes, want 800", len(got))
	}
}

package agent

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// FuzzLoad feeds arbitrary sources and signatures to Load: it must return
// a Compiled or an invalid_compiled error, never panic or hang, and a
// loaded program must execute (success or a clean failure) and survive a
// save/load round trip.
func FuzzLoad(f *testing.F) {
	seeds := []struct{ src, sig string }{
		{scorerProgram, scorerSig},
		{"(fn [a] 1)", ":int"},
		{"(defn h [x] x) (defn f [{:keys [a]}] (h a))", "(a :int) -> :int"},
		{"(fn [a b] 1)", ""},
		{"(fn [& xs] xs)", ""},
		{"(fn ([a] 1) ([a b] 2))", ":any"},
		{"42", ":int"},
		{"(fn [a] (+ 1", ":int"},
		{`(fn [_] (tool/threshold {:kind "default"}))`, ":int"},
		{"(def ptc-compiled-fn 1) (fn [a] a)", ""},
		{"(fn [a] (fail {:reason :x :message \"m\"}))", "{x :int}"},
		{"#(inc %)", "(n :int) -> :int"},
		{"(fn [{:keys [a]}] a)", "(a"},
	}
	for _, s := range seeds {
		f.Add(s.src, s.sig)
	}
	tools := map[string]Tool{"threshold": thresholdTool(new(atomic.Int64))}
	f.Fuzz(func(t *testing.T, src, sig string) {
		c, err := Load(src, sig, LoadOptions{Tools: tools, Limits: Limits{ProgramTimeout: 20 * time.Millisecond}})
		if err != nil {
			if !errors.Is(err, ErrInvalidCompiled) {
				t.Fatalf("Load error %v does not match ErrInvalidCompiled", err)
			}
			return
		}
		st, err := c.Execute(context.Background(), map[string]any{"a": int64(1), "n": int64(2)})
		if st == nil || (err == nil) != (st.Fail == nil) {
			t.Fatalf("Execute step %+v err %v", st, err)
		}
		doc, err := c.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		back, err := LoadCompiled(doc, LoadOptions{Tools: tools})
		if err != nil {
			t.Fatalf("reload of a loaded program failed: %v\n%s", err, doc)
		}
		if back.Source != c.Source || back.Signature != c.Signature {
			t.Fatalf("round trip changed %q %q to %q %q", c.Source, c.Signature, back.Source, back.Signature)
		}
	})
}

// FuzzLoadCompiled feeds arbitrary documents to LoadCompiled: an error
// must match ErrInvalidCompiled; never a panic.
func FuzzLoadCompiled(f *testing.F) {
	f.Add([]byte(`{"format":"ptc-compiled","version":1,"signature":":int","source":"(fn [a] 1)"}`))
	f.Add([]byte(`{"format":"ptc-compiled","version":1,"source":"(fn [a] 1)","tools":["threshold"],"validation":"warn_only","metadata":{"turns":2}}`))
	f.Add([]byte(`{"format":"ptc-compiled","version":9,"source":"(fn [a] 1)"}`))
	f.Add([]byte(`{"format":"ptc-compiled","version":1,"source":"(fn [a b] 1)"}`))
	f.Add([]byte(`{"format":"x"}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"format":"ptc-compiled","version":1,"source":"(fn [a] 1)","validation":"nope"}`))
	tools := map[string]Tool{"threshold": thresholdTool(new(atomic.Int64))}
	f.Fuzz(func(t *testing.T, doc []byte) {
		c, err := LoadCompiled(doc, LoadOptions{Tools: tools, Limits: Limits{ProgramTimeout: 20 * time.Millisecond}})
		if err != nil {
			if !errors.Is(err, ErrInvalidCompiled) {
				t.Fatalf("error %v does not match ErrInvalidCompiled", err)
			}
			return
		}
		if c.Source == "" {
			t.Fatal("loaded a program with an empty source")
		}
	})
}

// Command clojurediff evaluates generated expressions with PTC-Lisp and with
// Clojure 1.11 and prints where they disagree: the differential run behind
// the interpreter's conformance rows (docs/lisp-builtins.md).
//
//	go run ./internal/clojurediff [-seed 1] [-n 3000] [-clojure clojure] [-all]
//
// It needs Clojure (Debian's clojure package: apt-get install clojure).
// Both sides print each result through the same canonical form, so the
// documented differences of representation do not count: a list or lazy
// seq is a vector, a character a one-character string, and a map or set
// lists its entries sorted by their printed text. Differences of value
// remain, and so do the rows of "Differences from Clojure" (1 and 1.0
// equal, flexible keyword lookup, lenient nil handling, ...), which a
// reader skips by eye; -all also prints the expressions where only one
// side fails.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/ptcfleet/ptc/pkg/lisp"
)

// canon rewrites a value into the form both sides print alike. It is
// PTC-Lisp and Clojure at once; clojureCanon adds characters, which
// PTC-Lisp does not have.
const canon = `(defn canon [v]
  (cond
    (map? v) (vec (cons "#M" (sort-by pr-str (map (fn [e] [(canon (key e)) (canon (val e))]) v))))
    (set? v) (vec (cons "#S" (sort-by pr-str (map canon v))))
    (sequential? v) (mapv canon v)
    :else v))
`

var clojureCanon = strings.Replace(canon, "    :else v))", "    (char? v) (str v)\n    :else v))", 1)

// clojureRunner evaluates each line of the file named by its first
// argument and writes a line per result to its second: the canonical
// printed value, "ERR <class>", or "TIMEOUT" after 2 s (an expression
// whose sequence never ends in Clojure).
const clojureRunner = `(ns clojurediff.run (:require [clojure.string :as str] [clojure.set :as set] [clojure.walk :as walk]))
%s
(let [[in out-file] *command-line-args*
      out (java.io.PrintWriter. (java.io.FileWriter. out-file))]
  (doseq [l (str/split-lines (slurp in))]
    (let [f (future (try (binding [*ns* (the-ns 'clojurediff.run)]
                           (pr-str (canon (eval (read-string l)))))
                         (catch Throwable e (str "ERR " (.getSimpleName (class e))))))
          r (deref f 2000 "TIMEOUT")]
      (when (= r "TIMEOUT") (future-cancel f))
      (.println out (str/replace r "\n" "\\n"))))
  (.close out)
  (shutdown-agents)
  (System/exit 0))
`

func main() {
	seed := flag.Uint64("seed", 1, "the seed of the expressions")
	n := flag.Int("n", 3000, "how many expressions")
	clj := flag.String("clojure", "clojure", "the Clojure command")
	all := flag.Bool("all", false, "also print the expressions where only one side fails")
	flag.Parse()
	if err := run(context.Background(), os.Stdout, *clj, *seed, *n, *all); err != nil {
		fmt.Fprintln(os.Stderr, "clojurediff:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, w io.Writer, clj string, seed uint64, n int, all bool) error {
	exprs := expressions(seed, n)
	dir, err := os.MkdirTemp("", "clojurediff")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	in, out, script := filepath.Join(dir, "in.txt"), filepath.Join(dir, "out.txt"), filepath.Join(dir, "run.clj")
	if err := os.WriteFile(in, []byte(strings.Join(exprs, "\n")+"\n"), 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(script, []byte(fmt.Sprintf(clojureRunner, clojureCanon)), 0o600); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, clj, script, in, out)
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("running %s: %w", clj, err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		return err
	}
	theirs := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(theirs) != len(exprs) {
		return fmt.Errorf("clojure printed %d results for %d expressions", len(theirs), len(exprs))
	}
	var counts [nOutcomes]int
	for i, e := range exprs {
		ours := evalPTC(ctx, e)
		o := classify(theirs[i], ours)
		counts[o]++
		if o == differ || all && (o == onlyClojureFails || o == onlyPTCFails) {
			fmt.Fprintf(w, "%s | %s\n  clojure: %s\n  ptc:     %s\n", outcomeNames[o], e, theirs[i], ours)
		}
	}
	for o, c := range counts {
		fmt.Fprintf(w, "%s: %d\n", outcomeNames[o], c)
	}
	return nil
}

// evalPTC evaluates e with PTC-Lisp and prints its canonical value, or
// "ERR" and the error.
func evalPTC(ctx context.Context, e string) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	res, err := lisp.Exec(ctx, canon+"(canon "+e+")", lisp.Options{})
	if err != nil {
		var le *lisp.Error
		if errors.As(err, &le) {
			return "ERR " + le.Msg
		}
		return "ERR " + err.Error()
	}
	return strings.ReplaceAll(lisp.PrStr(res.Value), "\n", `\n`)
}

type outcome int

const (
	same outcome = iota
	bothFail
	onlyClojureFails
	onlyPTCFails
	differ
	clojureTimeout
	nOutcomes
)

var outcomeNames = [nOutcomes]string{"same", "both fail", "only clojure fails", "only ptc fails", "differ", "clojure timed out"}

// classify compares Clojure's line with PTC-Lisp's.
func classify(theirs, ours string) outcome {
	cf, pf := strings.HasPrefix(theirs, "ERR"), strings.HasPrefix(ours, "ERR")
	switch {
	case theirs == "TIMEOUT":
		return clojureTimeout
	case cf && pf:
		return bothFail
	case cf:
		return onlyClojureFails
	case pf:
		return onlyPTCFails
	case theirs == ours:
		return same
	}
	return differ
}

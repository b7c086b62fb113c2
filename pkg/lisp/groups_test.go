package lisp

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/builtins"
	"github.com/ptcfleet/ptc/pkg/lisp/internal/compile"
	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
)

// groupOracles are group-by and frequencies as Clojure 1.11 defines them,
// written as reduces over update: the builtins must return what they do.
// (update is flex: it finds "a" for :a, where group-by and frequencies
// keep them apart as Clojure does, so the random inputs below never hold
// a string and a keyword of the same name; TestGroupByGroups checks that
// case.)
const groupOracles = `
(defn group-by* [f coll] (reduce (fn [m x] (update m (f x) (fnil conj []) x)) {} coll))
(defn frequencies* [coll] (reduce (fn [m x] (update m x (fnil inc 0))) {} coll))
`

// groupInput returns a random collection literal for the group tests:
// nil, mixed key types (1 and 1.0 group together, "a" and :a do not),
// maps with and without the key, few or many distinct keys.
func groupInput(rng *rand.Rand) string {
	atoms := []string{"nil", "1", "1.0", "2", "-3", "\"a\"", ":b", "\"c\"", "true", "false", "[1]", "[1.0]", "{:k 1}", "#{2}", "2.5",
		"{:k 1 :n 2}", "{:k \"a\" :n 3}", "{:k :b}", "{:n 1}", "{\"k\" 2}", "{:k nil}", "{:k 1.0}"}
	n := rng.IntN(40)
	if rng.IntN(4) == 0 {
		n = 0
	}
	items := make([]string, n)
	for i := range items {
		if rng.IntN(3) == 0 { // many distinct keys: a large result map
			items[i] = fmt.Sprintf("{:k %d :n %d}", rng.IntN(30), i)
			continue
		}
		items[i] = atoms[rng.IntN(len(atoms))]
	}
	coll := "[" + strings.Join(items, " ") + "]"
	switch rng.IntN(4) {
	case 0:
		return "(seq " + coll + ")"
	case 1:
		return "(lazy-seq " + coll + ")"
	}
	return coll
}

// TestGroupingMatchesClojure compares group-by and frequencies, fused over
// a map/filter chain and not, with their Clojure definitions on random
// inputs: the same map (=), printed the same, or the same error.
func TestGroupingMatchesClojure(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	keyFns := []string{":k", "identity", "count", "nil?", "str", "#(get % :k)", "(fn [x] (if (map? x) (:n x) x))", "#(quot 10 %)"}
	stages := []string{"", "(map identity %s)", "(filter some? %s)", "(remove false? %s)", "(map #(if (map? %%) (:k %%) %%) %s)"}
	compared := 0
	for i := 0; i < 1500; i++ {
		coll := groupInput(rng)
		if st := stages[rng.IntN(len(stages))]; st != "" {
			coll = fmt.Sprintf(st, coll)
		}
		var got, want string
		if rng.IntN(2) == 0 {
			f := keyFns[rng.IntN(len(keyFns))]
			got, want = fmt.Sprintf("(group-by %s %s)", f, coll), fmt.Sprintf("(group-by* %s %s)", f, coll)
		} else {
			got, want = fmt.Sprintf("(frequencies %s)", coll), fmt.Sprintf("(frequencies* %s)", coll)
		}
		gv, ge := groupOutcome(groupOracles + got)
		wv, we := groupOutcome(groupOracles + want)
		if ge != "" || we != "" {
			if (ge == "") != (we == "") {
				t.Errorf("%s: %s%s, want %s%s", got, gv, ge, wv, we)
			}
			continue
		}
		if gv != wv {
			t.Errorf("%s:\n got  %s\n want %s", got, gv, wv)
		}
		same, se := groupOutcome(fmt.Sprintf("%s (= %s %s)", groupOracles, got, want))
		if same != "true" {
			t.Errorf("%s: (= builtin oracle) is %s%s", got, same, se)
		}
		compared++
	}
	if compared < 1000 {
		t.Fatalf("only %d programs compared", compared)
	}
}

func groupOutcome(src string) (string, string) {
	res, err := Exec(context.Background(), src, Options{})
	if err != nil {
		return "", err.(*core.Error).Kind.String()
	}
	return core.PrStr(res.Value), ""
}

// TestGroupByGroups checks group-by's groups as values of their own: each
// keeps its items in order, and growing one (conj) leaves the others as
// they were (the groups share one backing array).
func TestGroupByGroups(t *testing.T) {
	for src, want := range map[string]string{
		`(let [g (group-by odd? [1 2 3 4 5])] [(conj (g true) 9) (g false) (conj (g false) 8) (g true)])`: `[[1 3 5 9] [2 4] [2 4 8] [1 3 5]]`,
		`(group-by :k (filter :k [{:k 1 :i 0} {:i 1} {:k 2 :i 2} {:k 1 :i 3}]))`:                          `{1 [{:i 0 :k 1} {:i 3 :k 1}] 2 [{:i 2 :k 2}]}`,
		`(frequencies (map :k [{:k "a"} {:k :a} {} {:k "a"} {:k 1} {:k 1.0}]))`:                           `{1 2 :a 1 "a" 2 nil 1}`,
		`(group-by identity ["a" :a "a" 1 1.0])`:                                                          `{1 [1 1.0] :a [:a] "a" ["a" "a"]}`,
		`(group-by count [])`:                                                                             `{}`,
		`(frequencies (map inc []))`:                                                                      `{}`,
	} {
		got, e := groupOutcome(src)
		if got != want {
			t.Errorf("%s = %s%s, want %s", src, got, e, want)
		}
	}
	// a key function's error is raised at its position, fused or not
	for _, src := range []string{`(group-by #(quot 1 %) (map dec [1 2]))`, `(group-by #(quot 1 %) (identity (map dec [1 2])))`, `(group-by #(quot 1 %) [1 0])`} {
		_, err := Exec(context.Background(), src, Options{})
		e, ok := err.(*core.Error)
		if !ok || e.Kind != core.KindArithmetic || e.Pos.Col != strings.Index(src, "#(quot")+1 {
			t.Errorf("%s: %v, want an arithmetic error at column %d", src, err, strings.Index(src, "#(quot")+1)
		}
	}
	// the stage's error comes first, as in the unfused pipeline, though the
	// fused loop meets the key function's error first (at the first item)
	src := `(group-by #(quot 1 (- % 2)) (map #(quot 6 %) [3 2 0]))`
	_, err := Exec(context.Background(), src, Options{})
	if e, ok := err.(*core.Error); !ok || e.Pos.Col != strings.Index(src, "#(quot 6")+1 {
		t.Errorf("%s: %v, want the stage's error at column %d", src, err, strings.Index(src, "#(quot 6")+1)
	}
}

// TestGroupingCharged checks that what group-by and frequencies return is
// charged to the memory limit, fused or not, and that the stage vectors a
// fused form does not build are not.
func TestGroupingCharged(t *testing.T) {
	xs, ys := make([]any, 5000), make([]any, 20_000)
	for i := range ys {
		ys[i] = int64(i)
	}
	copy(xs, ys)
	for src, wantErr := range map[string]bool{
		`(count (group-by even? ctx/xs))`:                 false,
		`(count (group-by even? (map inc ctx/xs)))`:       false,
		`(count (frequencies (map even? ctx/xs)))`:        false,
		`(count (group-by identity ctx/xs))`:              true, // 5,000 groups
		`(count (group-by identity (map inc ctx/xs)))`:    true,
		`(count (frequencies (map inc ctx/xs)))`:          true, // 5,000 counts
		`(count (frequencies (filter #(< % 10) ctx/xs)))`: false,
		`(count (group-by :k (filter #(< % 10) ctx/xs)))`: false,
		`(count (group-by even? ctx/ys))`:                 true, // the groups' 20,000 slots
		`(count (group-by even? (map inc ctx/ys)))`:       true,
		`(count (filter even? (map inc ctx/ys)))`:         false, // no stage vector is built
		`(count (frequencies (map even? ctx/ys)))`:        false,
	} {
		_, err := Exec(context.Background(), src, Options{Context: map[string]any{"xs": xs, "ys": ys}, MaxMemory: 256 << 10})
		e, isErr := err.(*core.Error)
		if err != nil && (!isErr || e.Kind != core.KindMemory) {
			t.Errorf("%s: %v, want a memory error or none", src, err)
			continue
		}
		if (err != nil) != wantErr {
			t.Errorf("%s: error %v, want one: %v", src, err, wantErr)
		}
	}
}

// TestSpecialFormsCompile checks the special forms' one list against the
// compiler: each listed name is a special form to it (a call of one with
// no arguments fails as that form's misuse or runs, never as an unbound
// name), and a builtin's name is not.
func TestSpecialFormsCompile(t *testing.T) {
	for _, f := range builtins.SpecialForms {
		_, err := Exec(context.Background(), "("+f.Name+")", Options{})
		var e *core.Error
		if errors.As(err, &e) && e.Kind == core.KindUnbound {
			t.Errorf("(%s) fails as an unbound name: %v", f.Name, err)
		}
	}
	if compile.IsSpecialForm("inc") {
		t.Error("inc is a builtin, not a special form")
	}
}

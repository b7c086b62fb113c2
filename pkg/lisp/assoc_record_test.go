package lisp

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
)

// TestWideRecordWritesMatchMaps checks writes to host records of more
// than 8 fields (assoc, update, update-in, assoc-in, which replace a field
// of the record as a wide map) against the same writes to the record made
// an interpreter map first with (into {} ...): the same value, or the same
// error kind, message and position.
func TestWideRecordWritesMatchMaps(t *testing.T) {
	outcome := func(src string, rec map[string]any) string {
		res, err := Exec(context.Background(), src, Options{Context: map[string]any{"r": rec, "rs": []map[string]any{rec, rec}}})
		if err != nil {
			e, ok := err.(*core.Error)
			if !ok {
				return "error " + err.Error()
			}
			return fmt.Sprintf("error %s %s %v", e.Kind, e.Msg, e.Pos)
		}
		return core.PrStr(res.Value)
	}
	programs := []string{
		`(assoc ctx/r :f01 2)`,
		`(assoc ctx/r "f01" 2 :new 3)`,
		`(update ctx/r :f00 inc)`,
		`(update ctx/r "f02" str "x")`,
		`(update ctx/r :f01 inc)`, // a string: inc's error
		`(update-in ctx/r [:f03 :zip] + 10)`,
		`(update-in ctx/r [:f00] (fnil inc 0))`,
		`(update-in ctx/r [:missing :zip] (fnil inc 0))`,
		`(assoc-in ctx/r [:f03 :city] "y")`,
		`(let [m (update ctx/r :f00 inc)] [(:f00 m) (count m) (get m "f04") (keys m) (= m (assoc ctx/r :f00 (inc (:f00 ctx/r))))])`,
		`(map #(update-in % [:f03 :zip] inc) ctx/rs)`,
		`(reduce + (map #(:f00 (update % :f00 inc)) ctx/rs))`,
	}
	values := 0
	for _, width := range []int{9, 12, 30, 64, 65} {
		rec := map[string]any{}
		for f := 0; f < width; f++ {
			key := fmt.Sprintf("f%02d", f)
			switch f % 5 {
			case 0:
				rec[key] = int64(2000 + f)
			case 1:
				rec[key] = "text"
			case 3:
				rec[key] = map[string]any{"zip": int64(10001), "city": "x"}
			case 4:
				rec[key] = []any{int64(1), nil}
			default:
				rec[key] = float64(f) / 2
			}
		}
		for _, src := range programs {
			got := outcome(src, rec)
			plain := strings.ReplaceAll(strings.ReplaceAll(src, "ctx/rs", "(mapv #(into {} %) ctx/rs)"), "ctx/r ", "(into {} ctx/r) ")
			if want := outcome(plain, rec); got != want {
				t.Errorf("width %d: %s\n  host record: %s\n  map:         %s", width, src, got, want)
			}
			if !strings.HasPrefix(got, "error") {
				values++
			}
		}
	}
	if want := 5 * (len(programs) - 1); values != want {
		t.Errorf("%d programs gave a value, want %d (all but the one that fails)", values, want)
	}
}

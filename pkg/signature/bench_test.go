package signature

import (
	"strconv"
	"testing"
)

const benchSig = `(query :string, options {limit :int?, sort :string?}) ->
{results [{id :int, score :float, title :string, tags [:keyword], customer {id :int, name :string, email :string?}, _raw :map}], total :int}`

func BenchmarkParse(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(benchSig); err != nil {
			b.Fatal(err)
		}
	}
}

func benchRecords(n int) map[string]any {
	results := make([]any, n)
	for i := range results {
		results[i] = map[string]any{
			"id":    int64(i),
			"score": float64(i) / 3,
			"title": "title " + strconv.Itoa(i),
			"tags":  []any{"a", "b"},
			"customer": map[string]any{
				"id": int64(i), "name": "n", "email": nil,
			},
			"_raw": map[string]any{"x": 1},
		}
	}
	return map[string]any{"results": results, "total": int64(n)}
}

// BenchmarkValidate validates a 1,000-element list of records (6 fields, a
// nested map and a list each).
func BenchmarkValidate(b *testing.B) {
	sig := MustParse(benchSig)
	v := benchRecords(1000)
	b.ReportAllocs()
	for b.Loop() {
		if err := sig.ValidateOutput(v, Enabled); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValidateStrict(b *testing.B) {
	sig := MustParse(benchSig)
	v := benchRecords(1000)
	b.ReportAllocs()
	for b.Loop() {
		if err := sig.ValidateOutput(v, Strict); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkValidateErrors validates 1,000 records that each have one bad
// field, so every element reports a problem with its path.
func BenchmarkValidateErrors(b *testing.B) {
	sig := MustParse(benchSig)
	v := benchRecords(1000)
	for _, r := range v["results"].([]any) {
		r.(map[string]any)["id"] = "x"
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := sig.ValidateOutput(v, Enabled); err == nil {
			b.Fatal("no error")
		}
	}
}

func BenchmarkCoerceInputs(b *testing.B) {
	sig := MustParse(benchSig)
	args := map[string]any{"query": "q", "options": map[string]any{"limit": "10", "sort": "asc"}}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := sig.CoerceInputs(args, Enabled); err != nil {
			b.Fatal(err)
		}
	}
}

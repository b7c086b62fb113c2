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

// benchRichSig is benchSig with an enum, unions and refinements in place
// of plain types.
const benchRichSig = `(query :string(min 1), options {limit :int(min 1, max 500)?, sort "asc" | "desc"?}) ->
{results [{id :int(min 0), score :float(min 0, max 1000), title :string(max 80, pattern "^title"), tags [:keyword](max 5), customer {id :int | :string, name :string, email :string?}, _raw :map}], total :int}`

// BenchmarkValidateRich validates the records of BenchmarkValidate
// against benchRichSig.
func BenchmarkValidateRich(b *testing.B) {
	sig := MustParse(benchRichSig)
	v := benchRecords(1000)
	b.ReportAllocs()
	for b.Loop() {
		if err := sig.ValidateOutput(v, Enabled); err != nil {
			b.Fatal(err)
		}
	}
}

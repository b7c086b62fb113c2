package signature_test

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/ptcfleet/ptc/pkg/signature"
)

// searchSig is parsed once, at package initialisation.
var searchSig = signature.MustParse("(query :string, limit :int?) -> [{id :int, title :string, _score :float}]")

func ExampleParse() {
	sig, err := signature.Parse(`(user {name :string, email :string}, topic :string) ->
		{count :int, _ids [:int]}`)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(sig)
	fmt.Println(sig.Prompt())

	_, err = signature.Parse("{id :int, name}")
	fmt.Println(err)
	// Output:
	// (user {name :string, email :string}, topic :string) -> {count :int, _ids [:int]}
	// (user {name :string, email :string}, topic :string) -> {count :int}
	// 1:15: expected type after field "name", got "}"
	//  | {id :int, name}
	//  |               ^
}

func ExampleValidate() {
	sig := signature.MustParse("{results [{customer {id :int}, amount :float}]}")
	result := map[string]any{"results": []any{
		map[string]any{"customer": map[string]any{"id": "abc"}, "amount": 9.5},
		map[string]any{"customer": map[string]any{"id": int64(7)}, "amount": int64(3)},
		map[string]any{"customer": map[string]any{"id": int64(8)}, "amount": nil},
	}}
	if err := signature.Validate(sig.Output, result, signature.Enabled); err != nil {
		fmt.Println(err)
	}
	// Output:
	// - results[0].customer.id: expected integer, got string "abc"
	// - results[2].amount: expected float, got nil
}

func ExampleSignature_CoerceInputs() {
	args := map[string]any{"query": "go", "limit": "10"}
	args, warnings, err := searchSig.CoerceInputs(args, signature.Enabled)
	fmt.Printf("%v %T\n", args["limit"], args["limit"])
	fmt.Println(warnings)
	fmt.Println(err)

	_, _, err = searchSig.CoerceInputs(map[string]any{"limit": 5}, signature.Enabled)
	fmt.Println(err)
	// Output:
	// 10 int64
	// [limit: coerced string "10" to integer]
	// <nil>
	// - query: required input missing
}

func ExampleSignature_InputSchema() {
	enc := json.NewEncoder(os.Stdout)
	_ = enc.Encode(searchSig.InputSchema())
	_ = enc.Encode(signature.JSONSchema(signature.Public(searchSig.Output)))
	// Output:
	// {"properties":{"limit":{"type":["integer","null"]},"query":{"type":"string"}},"required":["query"],"type":"object"}
	// {"items":{"properties":{"id":{"type":"integer"},"title":{"type":"string"}},"required":["id","title"],"type":"object"},"type":"array"}
}

func ExampleSignature_CheckPlaceholders() {
	sig := signature.MustParse("(user {name :string}, topic :string) -> {count :int}")
	fmt.Println(sig.CheckPlaceholders("Find emails for {{user.name}} about {{topic}}"))
	fmt.Println(sig.CheckPlaceholders("Hi {{user.nam}}, see {{sender}}"))
	// Output:
	// <nil>
	// placeholders {{user.nam}}, {{sender}} not found in signature
}

func ExampleForFunc() {
	type Args struct {
		Query string `json:"query"`
		Limit *int   `json:"limit"`
	}
	type Hit struct {
		ID    int     `json:"id"`
		Score float64 `json:"score"`
	}
	sig, err := signature.ForFunc[Args, []Hit]()
	fmt.Println(sig, err)
	// Output:
	// (query :string, limit :int?) -> [{id :int, score :float}] <nil>
}

func ExampleParseMode() {
	m, err := signature.ParseMode("warn_only")
	fmt.Println(m, m.Fatal(), err)
	// Output:
	// warn_only false <nil>
}

package signature_test

import (
	"encoding/json"
	"fmt"

	"github.com/ptcfleet/ptc/pkg/signature"
)

// An MCP tool's JSON Schemas become a signature, enums, unions and
// bounds included; what the DSL cannot say is typed :any and noted.
func ExampleFromJSONSchema() {
	var input, output any
	_ = json.Unmarshal([]byte(`{"type":"object","properties":{
		"query":{"type":"string"},
		"limit":{"type":"integer","minimum":1,"maximum":100},
		"sort":{"enum":["date","score"]},
		"filter":{"anyOf":[{"type":"string"},{"type":"array","items":{"type":"string"}}]},
		"near":{"$ref":"#/$defs/Point"}},
		"required":["query"]}`), &input)
	_ = json.Unmarshal([]byte(`{"type":"array","items":{"type":"object",
		"properties":{"id":{"type":"integer"},"title":{"type":["string","null"]}},"required":["id","title"]}}`), &output)
	sig, untyped, notes := signature.FromJSONSchema(input, output)
	fmt.Println(sig, untyped)
	for _, n := range notes {
		fmt.Println(n)
	}
	// Output:
	// (query :string, filter :string | [:string]?, limit :int(min 1, max 100)?, near :any?, sort "date" | "score"?) -> [{id :int, title :string?}] false
	// input.properties.near: $ref is not supported; typed :any
}

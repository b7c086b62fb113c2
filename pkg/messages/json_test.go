package messages

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestFromJSON(t *testing.T) {
	type rec struct {
		ID    int     `json:"id"`
		Price float64 `json:"price"`
		Whole float64 `json:"whole"`
		Tags  []string
		Skip  string `json:"-"`
	}
	got, err := FromJSON([]rec{{ID: 7, Price: 2.5, Whole: 3, Tags: []string{"a"}}})
	if err != nil {
		t.Fatal(err)
	}
	// encoding/json writes 3.0 as 3, so an integral float comes back an int.
	want := []any{map[string]any{"id": int64(7), "price": 2.5, "whole": int64(3), "Tags": []any{"a"}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("FromJSON = %#v, want %#v", got, want)
	}
	if v, _ := FromJSON("s"); v != "s" {
		t.Errorf("scalar = %#v", v)
	}
	if _, err := FromJSON(make(chan int)); err == nil || !strings.Contains(err.Error(), "chan int") {
		t.Errorf("chan: err = %v", err)
	}
	big := map[string]any{"n": json.Number("1e400"), "ok": []any{json.Number("12345678901234567890")}}
	if _, err := JSONNumbers(big); err == nil || err.Error() != "n: number 1e400 is out of range" {
		t.Errorf("out of range: err = %v", err)
	}
	v, err := JSONNumbers([]any{json.Number("12345678901234567890"), json.Number("-3")})
	if err != nil || !reflect.DeepEqual(v, []any{1.2345678901234567e19, int64(-3)}) {
		t.Errorf("JSONNumbers = %#v, %v", v, err)
	}
}

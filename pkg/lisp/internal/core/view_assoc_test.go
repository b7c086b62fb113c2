package core

import (
	"fmt"
	"testing"
)

// TestAssocRecordMatchesView checks AssocRecord against Assoc on the
// record's view: for every width, key spelling and kind of value, the same
// map (equal, printed alike, the same hash, the same entries with the same
// key spellings in the same order), and the same error for a value the
// interpreter cannot represent. It declines exactly the records and keys
// the general way must serve.
func TestAssocRecordMatchesView(t *testing.T) {
	record := func(width, seed int) map[string]any {
		r := map[string]any{}
		for f := 0; f < width; f++ {
			key := fmt.Sprintf("f%02d", f)
			switch f % 5 {
			case 0:
				r[key] = int64(seed*f + 2000) // above the small-integer cache
			case 1:
				r[key] = fmt.Sprintf("v%d", seed)
			case 2:
				r[key] = map[string]any{"zip": int64(seed), "city": "x"}
			case 3:
				r[key] = []any{int64(1), "a", nil}
			default:
				r[key] = nil
			}
		}
		return r
	}
	th := &Thread{}
	for _, width := range []int{SmallMapMax - 1, SmallMapMax, SmallMapMax + 1, 12, 30, WideMapMax, WideMapMax + 1} {
		for seed := 0; seed < 3; seed++ {
			src := record(width, seed)
			for _, key := range []Value{NewKeyword("f02"), "f01", NewKeyword(fmt.Sprintf("f%02d", width-1)), NewKeyword("nope"), "nope", int64(1)} {
				for _, val := range []Value{int64(5), Int(1 << 40), "s", nil, EmptyMap.Assoc(NewKeyword("a"), int64(1))} {
					name := fmt.Sprintf("w%d/seed%d/%s/%s", width, seed, PrStr(key), PrStr(val))
					want := newMapView(src).Assoc(key, val)
					got, ok := th.AssocRecord(HostMap{&src}, key, val)
					kname, isName := viewName(key)
					_, exists := src[kname]
					wantOK := width > SmallMapMax && width <= WideMapMax && isName && exists
					if ok != wantOK {
						t.Fatalf("%s: ok %v, want %v", name, ok, wantOK)
					}
					if !ok {
						continue
					}
					if !got.Wide() {
						t.Errorf("%s: not a wide map", name)
					}
					if !Equal(got, want) || PrStr(got) != PrStr(want) || HashValue(got) != HashValue(want) || got.Len() != want.Len() {
						t.Fatalf("%s:\n got %s\nwant %s", name, PrStr(got), PrStr(want))
					}
					ge, we := got.Entries(), want.Entries()
					for i := range we {
						if ge[i].Key != we[i].Key || TypeName(ge[i].Val) != TypeName(we[i].Val) {
							t.Fatalf("%s: entry %d is %s %s, want %s %s", name, i, PrStr(ge[i].Key), TypeName(ge[i].Val), PrStr(we[i].Key), TypeName(we[i].Val))
						}
					}
					// the result is a map like any other: a further write
					// of a new key and a read of every key agree
					k2 := NewKeyword("added")
					if g2, w2 := got.Assoc(k2, int64(1)), want.Assoc(k2, int64(1)); !Equal(g2, w2) || PrStr(g2) != PrStr(w2) {
						t.Fatalf("%s: after assoc of a new key\n got %s\nwant %s", name, PrStr(g2), PrStr(w2))
					}
					for k := range src {
						gv, gok := got.Get(NewKeyword(k))
						wv, wok := want.Get(NewKeyword(k))
						if gok != wok || !Equal(gv, wv) {
							t.Fatalf("%s: (get m :%s) is %s, want %s", name, k, PrStr(gv), PrStr(wv))
						}
					}
				}
			}
		}
	}

	// a value the interpreter cannot represent: the same error, naming the key
	src := record(12, 1)
	src["f05"] = make(chan int)
	catch := func(f func()) (msg string) {
		defer func() {
			e, ok := recover().(*HostDataError)
			if !ok {
				t.Fatalf("want a *HostDataError panic")
			}
			msg = e.Error()
		}()
		f()
		return ""
	}
	wantMsg := catch(func() { newMapView(src).Assoc(NewKeyword("f00"), int64(1)) })
	gotMsg := catch(func() { th.AssocRecord(HostMap{&src}, NewKeyword("f00"), int64(1)) })
	if gotMsg != wantMsg {
		t.Fatalf("error %q, want %q", gotMsg, wantMsg)
	}
}

// TestAssocRecordAllocates checks that a write to a field of wide host
// records of one key set shares their shape and takes its values from a
// slab: under one allocation a record, where the view's form and its copy
// make one or more for each field.
func TestAssocRecordAllocates(t *testing.T) {
	recs := make([]map[string]any, 64)
	for i := range recs {
		r := map[string]any{}
		for f := 0; f < 30; f++ {
			r[fmt.Sprintf("f%02d", f)] = fmt.Sprintf("v%d", f) // strings: no box
		}
		recs[i] = r
	}
	th := &Thread{}
	key, val := NewKeyword("f07"), Value("x")
	i := 0
	got := testing.AllocsPerRun(200, func() {
		if _, ok := th.AssocRecord(HostMap{&recs[i%len(recs)]}, key, val); !ok {
			t.Fatal("declined")
		}
		i++
	})
	general := testing.AllocsPerRun(20, func() { newMapView(recs[0]).Assoc(key, val) })
	t.Logf("%.2f allocations a record, %.0f through the form", got, general)
	if got >= 1 || general < 30 {
		t.Fatalf("%.2f allocations a record (the view's form and copy: %.0f)", got, general)
	}
}

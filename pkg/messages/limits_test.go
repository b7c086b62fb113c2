package messages

import (
	"reflect"
	"testing"
	"time"
)

// everyLimit returns Limits with every number set to a distinct value
// times sign, found by reflection so that a new limit is covered.
func everyLimit(sign int64) Limits {
	var l Limits
	n := int64(0)
	var fill func(v reflect.Value)
	fill = func(v reflect.Value) {
		for i := range v.NumField() {
			f := v.Field(i)
			if f.Kind() == reflect.Struct {
				fill(f)
				continue
			}
			n++
			if f.Kind() == reflect.Float64 {
				f.SetFloat(float64(sign * n))
				continue
			}
			f.SetInt(sign * n)
		}
	}
	fill(reflect.ValueOf(&l).Elem())
	return l
}

func TestLimitsOverride(t *testing.T) {
	base := Limits{MaxTurns: 3, LLMTimeout: time.Second, PromptLimit: PromptLimit{List: 7, String: 9}}
	if got := base.Override(Limits{}); got != base {
		t.Errorf("zero limits changed %+v into %+v", base, got)
	}
	got := base.Override(Limits{MaxTurns: -1, MissionTimeout: time.Minute, PromptLimit: PromptLimit{String: 50}})
	want := Limits{MaxTurns: -1, LLMTimeout: time.Second, MissionTimeout: time.Minute, PromptLimit: PromptLimit{List: 7, String: 50}}
	if got != want {
		t.Errorf("override: got %+v, want %+v", got, want)
	}
	for _, sign := range []int64{1, -1} {
		o := everyLimit(sign)
		if got := base.Override(o); got != o {
			t.Errorf("every limit set (sign %d): got %+v, want %+v", sign, got, o)
		}
	}
}

func TestLimitsWithDefaults(t *testing.T) {
	if got := (Limits{}).WithDefaults(); got != DefaultLimits() {
		t.Errorf("zero limits: got %+v, want the defaults %+v", got, DefaultLimits())
	}
	d := DefaultLimits()
	if d.MaxTurns != DefaultMaxTurns || d.MissionTimeout != DefaultMissionTimeout || d.PromptLimit.String != DefaultStringLimit ||
		d.MaxToolCalls != 0 || d.MaxSteps != 0 {
		t.Errorf("DefaultLimits: %+v", d)
	}
	got := Limits{MaxTurns: -1, ProgramMemory: 10, PromptLimit: PromptLimit{List: -1}}.WithDefaults()
	want := d
	want.MaxTurns, want.ProgramMemory, want.PromptLimit.List = -1, 10, -1
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

// An agent spec's limits travel as fields of the spec itself: the wire
// names are the same as in Mission.Limits.
func TestAgentSpecLimitsInline(t *testing.T) {
	js, err := EncodeJSON(&AgentSpec{Prompt: "p", Limits: Limits{MaxTurns: 2, LLMTimeout: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"llm_timeout":1000000000,"max_turns":2,"prompt":"p"}`; string(js) != want {
		t.Errorf("got %s, want %s", js, want)
	}
	var back AgentSpec
	if err := DecodeJSON([]byte(`{"prompt":"p","max_depth":-1,"prompt_limit":{"list":3}}`), &back); err != nil {
		t.Fatal(err)
	}
	if back.MaxDepth != -1 || back.PromptLimit.List != 3 {
		t.Errorf("decoded %+v", back.Limits)
	}
}

func TestMissionEffectiveLimits(t *testing.T) {
	m := &Mission{Limits: Limits{MaxTurns: 2, MaxData: -1}}
	if got := m.EffectiveLimits(); got != m.Limits {
		t.Fatalf("a mission without an agent: %+v, want its own %+v", got, m.Limits)
	}
	m.Agent = &AgentSpec{Limits: Limits{MaxTurns: 7, MissionTimeout: time.Minute, MaxData: 1 << 20}}
	got := m.EffectiveLimits()
	want := Limits{MaxTurns: 2, MissionTimeout: time.Minute, MaxData: -1}
	if got != want {
		t.Fatalf("effective limits %+v, want %+v (the mission's over its agent's)", got, want)
	}
}

func TestLimitsOverrideAllocatesNothing(t *testing.T) {
	a, b := everyLimit(1), Limits{MaxTurns: 2, PromptLimit: PromptLimit{String: 9}}
	if n := testing.AllocsPerRun(100, func() { a = a.Override(b) }); n != 0 {
		t.Fatalf("Override allocates %.0f times, want 0", n)
	}
}

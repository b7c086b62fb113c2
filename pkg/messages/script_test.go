package messages

import (
	"strings"
	"testing"
)

// A request is answered by the first script_by_prompt entry whose prompt
// occurs in the requesting agent's mission, with that entry's reply for
// its turn, and by script otherwise; a missing reply names the script and
// the turn.
func TestScriptReply(t *testing.T) {
	m := &Mission{
		Script: []string{"top 1", "top 2"},
		ScriptByPrompt: []ScriptEntry{
			{Prompt: "Classify", Replies: []string{"classify 1"}},
			{Prompt: "urgent emails", Replies: []string{"child 1", "child 2"}},
			{Prompt: "emails", Replies: []string{"never: the entry before matches first"}},
		},
	}
	for _, c := range []struct {
		mission string
		turn    int
		want    string
	}{
		{"## Mission\nCount the orders.", 1, "top 1"},
		{"## Mission\nCount the orders.", 2, "top 2"},
		{"Classify this email.\n\nInput:\n{\"subject\": \"refund\"}", 1, "classify 1"},
		{"## Mission\nFind the urgent emails.", 1, "child 1"},
		{"## Mission\nFind the urgent emails.", 2, "child 2"},
	} {
		got, err := m.ScriptReply(c.mission, c.turn)
		if err != nil || got != c.want {
			t.Errorf("turn %d of %q: %q, %v; want %q", c.turn, c.mission, got, err, c.want)
		}
	}
	for _, c := range []struct {
		m       *Mission
		mission string
		turn    int
		want    string
	}{
		{m, "Find the urgent emails.", 3, `script_by_prompt[1] (prompt "urgent emails"): no reply for turn 3 (it has 2)`},
		{m, "Count the orders.", 3, "no reply for turn 3 (the script has 2)"},
		{&Mission{ScriptByPrompt: m.ScriptByPrompt}, "Count the orders. " + strings.Repeat("x", 100), 1,
			`no script_by_prompt entry's prompt occurs in the mission "Count the orders. ` + strings.Repeat("x", 80-len("Count the orders. ")) + `...", and the mission has no script`},
	} {
		if _, err := c.m.ScriptReply(c.mission, c.turn); err == nil || err.Error() != c.want {
			t.Errorf("turn %d of %q: %v, want %q", c.turn, c.mission, err, c.want)
		}
	}
}

// A mission's script_by_prompt is validated: entries need a prompt and
// replies, none empty; the replies count with script's towards the bound;
// only agent missions without another model run on it.
func TestScriptByPromptValidate(t *testing.T) {
	base := func() *Mission {
		return &Mission{ID: NewMissionID(), Kind: KindAgent, Agent: &AgentSpec{Prompt: "p"}}
	}
	ok := base()
	ok.ScriptByPrompt = []ScriptEntry{{Prompt: "child", Replies: []string{"r"}}}
	if err := ok.Validate(); err != nil || !ok.Scripted() || !Summarize(ok).Scripted {
		t.Fatalf("valid script_by_prompt: %v, scripted %v", err, ok.Scripted())
	}
	many := make([]string, MaxScriptReplies)
	for i := range many {
		many[i] = "r"
	}
	for _, c := range []struct {
		edit func(m *Mission)
		want string
	}{
		{func(m *Mission) { m.ScriptByPrompt = []ScriptEntry{{Prompt: " ", Replies: []string{"r"}}} }, "mission.script_by_prompt[0].prompt: empty"},
		{func(m *Mission) { m.ScriptByPrompt = []ScriptEntry{{Prompt: "a"}} }, "mission.script_by_prompt[0].replies: empty"},
		{func(m *Mission) {
			m.ScriptByPrompt = []ScriptEntry{{Prompt: "a", Replies: []string{"r"}}, {Prompt: "b", Replies: []string{"r", "\n"}}}
		}, "mission.script_by_prompt[1].replies[1]: empty"},
		{func(m *Mission) {
			m.Script = many
			m.ScriptByPrompt = []ScriptEntry{{Prompt: "a", Replies: []string{"r"}}}
		}, "mission.script: 101 replies, at most 100"},
		{func(m *Mission) {
			m.Model = "gpt"
			m.ScriptByPrompt = []ScriptEntry{{Prompt: "a", Replies: []string{"r"}}}
		}, `mission.script_by_prompt: set together with model "gpt"`},
	} {
		m := base()
		c.edit(m)
		if err := m.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want %q", err, c.want)
		}
	}
}

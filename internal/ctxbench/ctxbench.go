// Package ctxbench measures how much of a mission's data reaches the model:
// three data-heavy missions, each run in PTC-Lisp mode and in text mode
// (native tool calling) with scripted models that make the same decisions,
// at a given scale of records. It counts the tokens of every request (system
// prompt, messages, tool calls and results, tool definitions) with the
// o200k_base BPE encoding (github.com/tiktoken-go/tokenizer, vocabulary
// compiled in, no network), and its bytes.
//
// o200k_base is the encoding of OpenAI's current models (GPT-4o, GPT-4.1,
// o-series): a real tokenizer for one of the providers the fleet speaks.
// Anthropic publishes no offline tokenizer; its counts differ somewhat, the
// same way for both modes. The per-message framing a provider adds (a few
// tokens per message) is not counted.
package ctxbench

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"sync"

	"github.com/tiktoken-go/tokenizer"

	"github.com/ptcfleet/ptc/pkg/agent"
	"github.com/ptcfleet/ptc/pkg/agent/llm"
)

// Mode is how the model works: PTC-Lisp programs or text with native tool
// calls.
type Mode string

// Modes.
const (
	PTC  Mode = "ptc"
	Text Mode = "text"
)

// Result is one measured run.
type Result struct {
	Mission string
	Mode    Mode
	Scale   int
	Records int
	// Requests is the number of model requests; PromptTokens their summed
	// o200k_base tokens and LargestTokens the largest request's;
	// PromptBytes their summed size in bytes.
	Requests      int
	PromptTokens  int
	LargestTokens int
	PromptBytes   int
	// Return is the mission's answer.
	Return any
}

// Saving is the fraction of text mode's prompt tokens that ptc does not
// send: 1 - ptc/text.
func Saving(ptc, text Result) float64 {
	return 1 - float64(ptc.PromptTokens)/float64(text.PromptTokens)
}

// Mission is one benchmark mission.
type Mission struct {
	Name string
	// records returns how many records the mission's tools hold at scale.
	records func(scale int) int
	tools   func(scale int) map[string]agent.Tool
	spec    agent.Spec
	// programs are the PTC-Lisp replies, in turn order.
	programs []string
	// calls are the tool calls of the text-mode model's first reply; answer
	// computes its final answer from the tool results it was sent.
	calls  []string
	answer func(results map[string][]map[string]any) any
}

// Missions are the three benchmark missions: triage of emails, totals over
// orders, a join of customers and orders.
func Missions() []Mission {
	return []Mission{
		{
			Name:    "triage-emails",
			records: func(s int) int { return 1000 * s },
			tools: func(s int) map[string]agent.Tool {
				return map[string]agent.Tool{"list_emails": listTool("() -> [{id :int, from :string, subject :string, body :string, urgent :bool}]", emails(1000*s))}
			},
			spec: agent.Spec{Name: "triage", Prompt: "Triage the inbox: how many emails are urgent, and the ids of the first 10 urgent ones.",
				Signature: "{urgent :int, first_ids [:int]}"},
			programs: []string{
				`(take 2 (tool/list_emails {}))`,
				`(let [u (filter :urgent (tool/list_emails {}))] (return {:urgent (count u) :first_ids (vec (take 10 (map :id u)))}))`,
			},
			calls: []string{"list_emails"},
			answer: func(r map[string][]map[string]any) any {
				var ids []any
				n := 0
				for _, e := range r["list_emails"] {
					if e["urgent"] == true {
						if n < 10 {
							ids = append(ids, e["id"])
						}
						n++
					}
				}
				return map[string]any{"urgent": n, "first_ids": ids}
			},
		},
		{
			Name:    "order-totals",
			records: func(s int) int { return 5000 * s },
			tools: func(s int) map[string]agent.Tool {
				return map[string]agent.Tool{"list_orders": listTool("() -> [{id :int, customer_id :int, status :string, total :float}]", orders(5000*s, 500*s))}
			},
			spec: agent.Spec{Name: "totals", Prompt: "How many orders are paid, and what is their total (rounded to cents)?",
				Signature: "{paid :int, total :float}"},
			programs: []string{
				`(take 2 (tool/list_orders {}))`,
				`(let [p (filter #(= "paid" (:status %)) (tool/list_orders {}))] (return {:paid (count p) :total (/ (Math/round (* 100 (sum-by :total p))) 100.0)}))`,
			},
			calls: []string{"list_orders"},
			answer: func(r map[string][]map[string]any) any {
				n, total := 0, 0.0
				for _, o := range r["list_orders"] {
					if o["status"] == "paid" {
						n++
						total += o["total"].(float64)
					}
				}
				return map[string]any{"paid": n, "total": math.Round(total*100) / 100}
			},
		},
		{
			Name:    "join-customers-orders",
			records: func(s int) int { return 500*s + 5000*s },
			tools: func(s int) map[string]agent.Tool {
				return map[string]agent.Tool{
					"list_customers": listTool("() -> [{id :int, name :string, region :string}]", customers(500*s)),
					"list_orders":    listTool("() -> [{id :int, customer_id :int, status :string, total :float}]", orders(5000*s, 500*s)),
				}
			},
			spec: agent.Spec{Name: "join", Prompt: "Which 3 customers of region north have the highest total of paid orders? Give name and total (rounded to cents).",
				Signature: "{top [{name :string, total :float}]}"},
			programs: []string{
				`[(take 2 (tool/list_customers {})) (take 2 (tool/list_orders {}))]`,
				`(let [north (into {} (map (juxt :id :name) (filter #(= "north" (:region %)) (tool/list_customers {}))))
      paid  (filter #(and (= "paid" (:status %)) (contains? north (:customer_id %))) (tool/list_orders {}))]
  (return {:top (->> paid (group-by :customer_id)
                     (map (fn [[id os]] {:name (get north id) :total (/ (Math/round (* 100 (sum-by :total os))) 100.0)}))
                     (sort-by :total >) (take 3) vec)}))`,
			},
			calls: []string{"list_customers", "list_orders"},
			answer: func(r map[string][]map[string]any) any {
				north := map[any]string{}
				for _, c := range r["list_customers"] {
					if c["region"] == "north" {
						north[c["id"]] = c["name"].(string)
					}
				}
				sums := map[any]float64{}
				for _, o := range r["list_orders"] {
					if _, ok := north[o["customer_id"]]; ok && o["status"] == "paid" {
						sums[o["customer_id"]] += o["total"].(float64)
					}
				}
				type row struct {
					name  string
					total float64
				}
				var rows []row
				for id, t := range sums {
					rows = append(rows, row{north[id], math.Round(t*100) / 100})
				}
				sort.Slice(rows, func(i, j int) bool { return rows[i].total > rows[j].total })
				var top []any
				for _, r := range rows[:min(3, len(rows))] {
					top = append(top, map[string]any{"name": r.name, "total": r.total})
				}
				return map[string]any{"top": top}
			},
		},
	}
}

func listTool(sig string, data []any) agent.Tool {
	return agent.FuncSig(sig, func(context.Context, map[string]any) (any, error) { return data, nil })
}

// The data is deterministic: record i is the same at every scale.

var regions = []string{"north", "south", "east", "west"}
var statuses = []string{"paid", "paid", "shipped", "refunded", "pending"}

func emails(n int) []any {
	out := make([]any, n)
	for i := range n {
		out[i] = map[string]any{"id": int64(i + 1), "from": fmt.Sprintf("customer%d@example.com", i%313),
			"subject": fmt.Sprintf("Order %d: question about delivery", 1000+i),
			"body":    fmt.Sprintf("Hello, my order %d has not arrived yet. Could you check where it is? Thanks.", 1000+i),
			"urgent":  i%7 == 3}
	}
	return out
}

func customers(n int) []any {
	out := make([]any, n)
	for i := range n {
		out[i] = map[string]any{"id": int64(i + 1), "name": fmt.Sprintf("Customer %d", i+1), "region": regions[i%len(regions)]}
	}
	return out
}

func orders(n, nCustomers int) []any {
	out := make([]any, n)
	for i := range n {
		out[i] = map[string]any{"id": int64(i + 1), "customer_id": int64((i*7919)%nCustomers + 1),
			"status": statuses[i%len(statuses)], "total": float64((i*37)%20000)/100 + 1}
	}
	return out
}

// Run runs mission m in mode at scale (1: the base record counts).
func Run(ctx context.Context, m Mission, mode Mode, scale int) (Result, error) {
	spec := m.spec
	spec.Tools = m.tools(scale)
	spec.MaxTurns = 3
	enc, err := encoding()
	if err != nil {
		return Result{}, err
	}
	rec := &recorder{enc: enc}
	var model llm.Model
	if mode == PTC {
		model = rec.wrap(func(req llm.Request) (*llm.Response, error) {
			if req.Turn > len(m.programs) {
				return nil, fmt.Errorf("no program for turn %d", req.Turn)
			}
			return &llm.Response{Content: "```clojure\n" + m.programs[req.Turn-1] + "\n```"}, nil
		})
	} else {
		spec.Output = agent.OutputText
		model = rec.wrap(func(req llm.Request) (*llm.Response, error) {
			results := toolResults(req)
			if len(results) == 0 {
				var calls []llm.ToolUse
				for i, name := range m.calls {
					calls = append(calls, llm.ToolUse{ID: fmt.Sprintf("call_%d", i+1), Name: name, Input: map[string]any{}})
				}
				return &llm.Response{ToolCalls: calls, StopReason: llm.StopToolUse}, nil
			}
			byName := map[string][]map[string]any{}
			for i, name := range m.calls {
				var rows []map[string]any
				if err := json.Unmarshal([]byte(results[fmt.Sprintf("call_%d", i+1)]), &rows); err != nil {
					return nil, fmt.Errorf("tool result of %s: %w", name, err)
				}
				byName[name] = rows
			}
			out, err := json.Marshal(m.answer(byName))
			if err != nil {
				return nil, err
			}
			return &llm.Response{Content: string(out), StopReason: llm.StopEndTurn}, nil
		})
	}
	a, err := agent.New(spec)
	if err != nil {
		return Result{}, err
	}
	st, err := a.Run(ctx, agent.RunOptions{Model: model})
	if err == nil {
		err = rec.err
	}
	if err != nil {
		return Result{}, fmt.Errorf("%s (%s, %d×): %w", m.Name, mode, scale, err)
	}
	r := Result{Mission: m.Name, Mode: mode, Scale: scale, Records: m.records(scale), Requests: len(rec.tokens), Return: st.Return}
	for i, n := range rec.tokens {
		r.PromptTokens += n
		r.LargestTokens = max(r.LargestTokens, n)
		r.PromptBytes += rec.bytes[i]
	}
	return r, nil
}

// toolResults maps the tool-call ids of req's messages to their results.
func toolResults(req llm.Request) map[string]string {
	out := map[string]string{}
	for _, m := range req.Messages {
		for _, b := range m.Content {
			if r, ok := b.(llm.ToolResult); ok {
				out[r.ToolUseID] = r.Content
			}
		}
	}
	return out
}

// encoding is the o200k_base codec, built once: its vocabulary is
// compiled into the binary, so counting needs no network.
var encoding = sync.OnceValues(func() (tokenizer.Codec, error) { return tokenizer.Get(tokenizer.O200kBase) })

// recorder measures the requests a model receives.
type recorder struct {
	enc    tokenizer.Codec
	mu     sync.Mutex
	tokens []int
	bytes  []int
	err    error
}

func (r *recorder) wrap(answer func(llm.Request) (*llm.Response, error)) llm.Model {
	return llm.Func(func(_ context.Context, req llm.Request) (*llm.Response, error) {
		n, err := RequestTokens(r.enc, req)
		r.mu.Lock()
		r.tokens = append(r.tokens, n)
		r.bytes = append(r.bytes, RequestBytes(req))
		if err != nil && r.err == nil {
			r.err = err
		}
		r.mu.Unlock()
		return answer(req)
	})
}

// requestParts are the texts a request sends the model: the system prompt,
// every message's text, tool calls (name and JSON input) and tool results,
// and the tool definitions (name, description, JSON input schema).
func requestParts(req llm.Request) []string {
	parts := []string{req.System}
	for _, m := range req.Messages {
		for _, b := range m.Content {
			switch x := b.(type) {
			case llm.Text:
				parts = append(parts, x.Text)
			case llm.ToolUse:
				in, _ := json.Marshal(x.Input)
				parts = append(parts, x.Name, string(in))
			case llm.ToolResult:
				parts = append(parts, x.Content)
			}
		}
	}
	for _, t := range req.Tools {
		schema, _ := json.Marshal(t.InputSchema)
		parts = append(parts, t.Name, t.Description, string(schema))
	}
	return parts
}

// RequestTokens counts the tokens of what a request sends the model (see
// requestParts) with enc.
func RequestTokens(enc tokenizer.Codec, req llm.Request) (int, error) {
	n := 0
	for _, p := range requestParts(req) {
		c, err := enc.Count(p)
		if err != nil {
			return 0, fmt.Errorf("counting tokens: %w", err)
		}
		n += c
	}
	return n, nil
}

// RequestBytes is the size in bytes of what a request sends the model (see
// requestParts).
func RequestBytes(req llm.Request) int {
	n := 0
	for _, p := range requestParts(req) {
		n += len(p)
	}
	return n
}

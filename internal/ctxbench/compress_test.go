package ctxbench

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/tiktoken-go/tokenizer"

	"github.com/ptcfleet/ptc/examples/shop"
	"github.com/ptcfleet/ptc/pkg/agent"
	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// The two-way measurement of compression: one 10-turn mission over the
// example shop, its answers scripted (the same with compression off and
// on), sent to fake providers that cache prompt prefixes the way the real
// ones do, and priced at list prices.

// shopTurns are the model's answers, one per turn: it looks at the data,
// keeps it with def, makes one mistake and fixes it, and returns.
var shopTurns = []string{
	"Let me look at the customers first.\n```clojure\n(def custs (tool/list_customers {}))\n(println \"customers:\" (count custs))\n(take 1 custs)\n```",
	"Now the paid orders.\n```clojure\n(def orders (tool/list_orders {:status \"paid\"}))\n(println \"paid orders:\" (count orders))\n(take 2 orders)\n```",
	"The enterprise customers' ids:\n```clojure\n(def ent (set (map :id (filter #(= \"enterprise\" (:tier %)) custs))))\n(count ent)\n```",
	"Their paid orders:\n```clojure\n(def ent-orders (filter #(contains? ent (:customer_id %)) ordrs))\n(count ent-orders)\n```",
	"A typo; with the right name:\n```clojure\n(def ent-orders (filter #(contains? ent (:customer_id %)) orders))\n(count ent-orders)\n```",
	"Revenue by region:\n```clojure\n(def region-of (into {} (map (juxt :id :region) custs)))\n(def rev-by-region (->> ent-orders\n                        (group-by #(region-of (:customer_id %)))\n                        (map (fn [[r os]] [r (sum-by :total os)]))\n                        (into {})))\n(sort-by val > rev-by-region)\n```",
	"The best region:\n```clojure\n(def best (key (apply max-key val rev-by-region)))\nbest\n```",
	"Its top three customers:\n```clojure\n(def name-of (into {} (map (juxt :id :name) custs)))\n(def top (->> ent-orders\n              (filter #(= best (region-of (:customer_id %))))\n              (group-by :customer_id)\n              (map (fn [[id os]] {:name (name-of id) :revenue (sum-by :total os)}))\n              (sort-by :revenue >)\n              (take 3)\n              vec))\ntop\n```",
	"And the urgent refund emails:\n```clojure\n(def refunds (tool/search_emails {:query \"refund\" :urgent true :limit 1000}))\n(println \"urgent refund emails:\" (count refunds))\n(count refunds)\n```",
	"Done.\n```clojure\n(return {:region best :top top :urgent_refunds (count refunds)})\n```",
}

// shopSpec is the mission's agent over the example shop's tools.
func shopSpec(compression bool) agent.Spec {
	d := shop.Default()
	return agent.Spec{
		Name: "regions",
		Prompt: "Which region brings the most revenue from paid orders of enterprise customers? " +
			"Name its top 3 enterprise customers by that revenue, and count the urgent support emails about refunds.",
		Signature:   "{region :string, top [{name :string, revenue :float}], urgent_refunds :int}",
		Limits:      agent.Limits{MaxTurns: len(shopTurns)},
		Compression: compression,
		Tools: map[string]agent.Tool{
			"list_customers": agent.Typed(d.ListCustomers).WithDescription("List customers, optionally filtered by region (north|south|east|west) and tier (free|pro|enterprise)."),
			"list_orders":    agent.Typed(d.ListOrders).WithDescription("List orders, optionally filtered by customer_id and status (paid|shipped|refunded|pending). Totals are in dollars."),
			"search_emails":  agent.Typed(d.SearchEmails).WithDescription("Search support emails by subject text; urgent filters on urgency; limit defaults to 100."),
			"get_customer":   agent.Typed(d.GetCustomer).WithDescription("Get one customer by id."),
		},
	}
}

// cacheStyle is how a fake provider caches prompt prefixes.
type cacheStyle string

const (
	// openAIStyle caches every prompt's prefix by itself; a request reads
	// the longest prefix, in tokens, that it shares with an earlier one,
	// rounded down to a multiple of 128, when that is at least 1,024
	// tokens. Cache writes cost nothing extra.
	openAIStyle cacheStyle = "openai"
	// anthropicStyle caches only at cache_control breakpoints (the system
	// prompt with CacheSystem, the last block with CacheHistory, a block
	// marked llm.Text.Cache): a request writes the prefix up to each
	// breakpoint, at least 1,024 tokens, that is not cached yet, and reads
	// the longest cached prefix ending at a block boundary up to its last
	// breakpoint.
	anthropicStyle cacheStyle = "anthropic"
	// noCache caches nothing (a provider or model without prompt
	// caching): every prompt token is paid in full.
	noCache cacheStyle = "no-cache"
)

// minCached is the shortest prefix the providers cache, in tokens.
const minCached = 1024

// List prices, US dollars per million tokens.
var (
	// OpenAI GPT-4.1: cached input at a quarter of the price, no write
	// surcharge.
	gpt41 = llm.Prices{Input: 2.00, CacheRead: 0.50, Output: 8.00}
	// Anthropic Claude Sonnet 4: cache reads at a tenth, 5-minute cache
	// writes at 1.25 times the input price.
	sonnet4 = llm.Prices{Input: 3.00, CacheRead: 0.30, CacheWrite: 3.75, Output: 15.00}
)

// segment is one cacheable unit of a request as a provider lays it out:
// the system prompt, or one text block of a message.
type segment struct {
	role       string
	text       string
	breakpoint bool
}

// segments lays req out as the provider reads it: the system prompt, then
// every message's text blocks in order (OpenAI's chat completions take a
// message as one string: its blocks joined with a newline).
func segments(style cacheStyle, req llm.Request) []segment {
	out := []segment{{role: "system", text: req.System, breakpoint: req.CacheSystem}}
	for i, m := range req.Messages {
		var texts []string
		var marks []bool
		for _, b := range m.Content {
			if t, ok := b.(llm.Text); ok {
				texts, marks = append(texts, t.Text), append(marks, t.Cache)
			}
		}
		if style == openAIStyle {
			out = append(out, segment{role: string(m.Role), text: strings.Join(texts, "\n")})
			continue
		}
		for j, t := range texts {
			bp := marks[j] || (req.CacheHistory && i == len(req.Messages)-1 && j == len(texts)-1)
			out = append(out, segment{role: string(m.Role), text: t, breakpoint: bp})
		}
	}
	return out
}

// cachingModel is a scripted model (answers by turn) behind a fake
// provider cache; it counts tokens with o200k_base and reports usage as
// the provider would.
type cachingModel struct {
	style   cacheStyle
	enc     tokenizer.Codec
	answers []string

	mu      sync.Mutex
	seen    [][]uint        // openAIStyle: the tokens of every earlier prompt
	cached  map[string]bool // anthropicStyle: the cached prefixes, by hash
	prompts []int           // prompt tokens per request
	last    string          // the last request's last text block
}

func newCachingModel(style cacheStyle, answers []string) (*cachingModel, error) {
	enc, err := encoding()
	if err != nil {
		return nil, err
	}
	return &cachingModel{style: style, enc: enc, answers: answers, cached: map[string]bool{}}, nil
}

func (m *cachingModel) Complete(_ context.Context, req llm.Request) (*llm.Response, error) {
	if req.Turn < 1 || req.Turn > len(m.answers) {
		return nil, fmt.Errorf("no answer for turn %d", req.Turn)
	}
	answer := m.answers[req.Turn-1]
	out, err := m.enc.Count(answer)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var u llm.Usage
	switch m.style {
	case openAIStyle, noCache:
		u, err = m.openAI(req)
	default:
		u, err = m.anthropic(req)
	}
	if err != nil {
		return nil, err
	}
	u.OutputTokens = int64(out)
	m.prompts = append(m.prompts, int(u.InputTokens))
	if segs := segments(anthropicStyle, req); len(segs) > 0 {
		m.last = segs[len(segs)-1].text
	}
	return &llm.Response{Content: answer, Usage: u, StopReason: llm.StopEndTurn}, nil
}

// openAI: the longest token prefix shared with an earlier prompt, in
// steps of 128 from 1,024.
func (m *cachingModel) openAI(req llm.Request) (llm.Usage, error) {
	var toks []uint
	for _, s := range segments(openAIStyle, req) {
		ids, _, err := m.enc.Encode(s.role + "\n" + s.text)
		if err != nil {
			return llm.Usage{}, err
		}
		toks = append(toks, ids...)
	}
	best := 0
	for _, prev := range m.seen {
		n := 0
		for n < len(prev) && n < len(toks) && prev[n] == toks[n] {
			n++
		}
		best = max(best, n)
	}
	read := 0
	if best >= minCached && m.style == openAIStyle {
		read = best / 128 * 128
	}
	m.seen = append(m.seen, toks)
	return llm.Usage{InputTokens: int64(len(toks)), CacheReadTokens: int64(read)}, nil
}

// anthropic: reads at block boundaries, writes at breakpoints.
func (m *cachingModel) anthropic(req llm.Request) (llm.Usage, error) {
	segs := segments(anthropicStyle, req)
	h := sha256.New()
	total, lastBP := 0, -1
	ends := make([]int, len(segs))    // tokens up to the end of segment i
	keys := make([]string, len(segs)) // the prefix through segment i
	for i, s := range segs {
		n, err := m.enc.Count(s.role + "\n" + s.text)
		if err != nil {
			return llm.Usage{}, err
		}
		total += n
		fmt.Fprintf(h, "%d:%s:%s|", len(s.text), s.role, s.text)
		ends[i], keys[i] = total, string(h.Sum(nil))
		if s.breakpoint {
			lastBP = i
		}
	}
	read := 0
	for i := 0; i <= lastBP; i++ {
		if m.cached[keys[i]] {
			read = ends[i]
		}
	}
	write := 0
	for i := 0; i <= lastBP; i++ {
		if segs[i].breakpoint && ends[i] >= minCached && !m.cached[keys[i]] {
			m.cached[keys[i]] = true
			write = ends[i] - read
		}
	}
	return llm.Usage{InputTokens: int64(total), CacheReadTokens: int64(read), CacheWriteTokens: int64(write)}, nil
}

// variant is one configuration of the shop mission.
type variant struct {
	name string
	// langSpec is the agent's language_spec ("": the default reference)
	langSpec string
	// reasoning is put before every scripted answer
	reasoning string
}

// variants: the mission as scripted; with the full language reference (a
// system prompt above 1,024 tokens, so both runs are cached from turn 1);
// and with a paragraph of reasoning before each program, as talkative
// models write.
var variants = []variant{
	{name: "default"},
	{name: "full-reference", langSpec: "full"},
	{name: "reasoning", reasoning: "I need to be careful here: the data is large, so I keep what I need in memory with def and only look at previews. " +
		"The tools return plain records; the orders refer to customers by customer_id, and totals are in dollars. " +
		"After this step I will check the result before going on, and I will return only when every part of the question is answered.\n"},
}

// styles are the two caching styles, each with its provider's list prices.
var styles = []struct {
	style  cacheStyle
	prices llm.Prices
}{{openAIStyle, gpt41}, {anthropicStyle, sonnet4}, {noCache, gpt41}}

// compressionRun is one measured run of the shop mission.
type compressionRun struct {
	prompts []int  // prompt tokens per turn
	last    string // turn 10's last text block
	usage   messages.Usage
	ret     any
}

// summariesOnly is the default strategy with no turn sent whole, measured
// for comparison.
var summariesOnly = agent.CoalescedHistory{CachePrefix: -1}

// runShopMission runs the shop mission of v against a fake provider of
// style, priced at p; with compression, strat renders the history (nil:
// the default).
func runShopMission(ctx context.Context, v variant, style cacheStyle, compression bool, strat agent.HistoryStrategy, p llm.Prices) (compressionRun, error) {
	answers := make([]string, len(shopTurns))
	for i, a := range shopTurns {
		answers[i] = v.reasoning + a
	}
	m, err := newCachingModel(style, answers)
	if err != nil {
		return compressionRun{}, err
	}
	spec := shopSpec(compression)
	spec.SystemPrompt.LanguageSpec = v.langSpec
	if compression {
		spec.HistoryStrategy = strat
	}
	a, err := agent.New(spec)
	if err != nil {
		return compressionRun{}, err
	}
	st, err := a.Run(ctx, agent.RunOptions{Model: llm.WithPrices(m, p)})
	if err != nil {
		return compressionRun{}, fmt.Errorf("%s, %s, compression %v: %w", v.name, style, compression, err)
	}
	return compressionRun{prompts: m.prompts, last: m.last, usage: st.Usage, ret: st.Return}, nil
}

// The measurement, both ways, for every variant and caching style: the
// runs reach the same answer in 10 turns; with compression turn 10's
// prompt is within 1.5 times turn 2's (in o200k_base tokens, with
// OpenAI-style and Anthropic-style framing), the mission sends fewer prompt tokens, the fake
// caches read from the cache both ways (the default strategy keeps the
// prompt's start whole until it reaches the cache minimum, then appends
// records), and compression costs less than without on every caching
// style. The figures (docs/agent.md, with the cost of each run) are
// logged.
func TestCompressionBothWays(t *testing.T) {
	ctx := context.Background()
	for _, v := range variants {
		for _, s := range styles {
			off, err := runShopMission(ctx, v, s.style, false, nil, s.prices)
			if err != nil {
				t.Fatal(err)
			}
			on, err := runShopMission(ctx, v, s.style, true, nil, s.prices)
			if err != nil {
				t.Fatal(err)
			}
			sums, err := runShopMission(ctx, v, s.style, true, summariesOnly, s.prices)
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range []compressionRun{off, on, sums} {
				t.Logf("%-14s %-9s compression %-9s prompt tokens by turn %v: total %d, output %d, cache read %d, written %d, cost $%.4f (%.2f)",
					v.name, s.style, []string{"off", "on", "summaries"}[i], r.prompts, r.usage.InputTokens, r.usage.OutputTokens, r.usage.CacheReadTokens, r.usage.CacheWriteTokens, r.usage.CostUSD, r.usage.CostUSD/off.usage.CostUSD)
			}
			if fmt.Sprint(off.ret) != fmt.Sprint(on.ret) || len(off.prompts) != len(shopTurns) || len(on.prompts) != len(shopTurns) {
				t.Fatalf("%s %s: answers %v / %v after %d / %d turns", v.name, s.style, off.ret, on.ret, len(off.prompts), len(on.prompts))
			}
			// turn 10's prompt lists memory with types and sizes
			if !strings.HasPrefix(on.last, "Memory: best (4-char string), custs [2000 maps], ent #{693 integers}, ent-orders [1722 maps], name-of {2000 entries}, ") {
				t.Errorf("%s %s: turn 10's last block with compression is %q", v.name, s.style, on.last)
			}
			growth := func(r compressionRun) float64 { return float64(r.prompts[9]) / float64(r.prompts[1]) }
			t.Logf("%-14s %-9s turn 10 / turn 2: %.2f without, %.2f with compression; cost with / without: %.2f",
				v.name, s.style, growth(off), growth(on), on.usage.CostUSD/off.usage.CostUSD)
			// from turn 2 to turn 10 the compressed prompt grows by a
			// record per turn: turn 10 within 1.5 times turn 2, with either
			// framing
			if g := growth(on); g > 1.5 {
				t.Errorf("%s %s: turn 10's prompt is %.3f times turn 2's with compression", v.name, s.style, g)
			}
			if on.usage.InputTokens >= off.usage.InputTokens {
				t.Errorf("%s %s: %d prompt tokens with compression, %d without", v.name, s.style, on.usage.InputTokens, off.usage.InputTokens)
			}
			for i, r := range []compressionRun{off, on} {
				if (r.usage.CacheReadTokens == 0) != (s.style == noCache) {
					t.Errorf("%s %s: the run with compression %v read %d tokens from the cache", v.name, s.style, i == 1, r.usage.CacheReadTokens)
				}
			}
			if ratio := on.usage.CostUSD / off.usage.CostUSD; ratio >= 1 {
				t.Errorf("%s %s: compression costs %.3f times as much", v.name, s.style, ratio)
			}
		}
	}
}

// BenchmarkCompression reports, for each variant, caching style and
// compression off, on and on with summaries only (and a provider without a cache): turn 2's and turn 10's prompt tokens, the
// mission's prompt and total tokens, cache reads and writes, and its cost
// at list prices (GPT-4.1 for OpenAI-style caching, Claude Sonnet 4 for
// Anthropic-style).
func BenchmarkCompression(b *testing.B) {
	for _, v := range variants {
		for _, s := range styles {
			for _, c := range []string{"off", "on", "summaries"} {
				b.Run(fmt.Sprintf("%s/%s/compression=%s", v.name, s.style, c), func(b *testing.B) {
					var strat agent.HistoryStrategy
					if c == "summaries" {
						strat = summariesOnly
					}
					var r compressionRun
					for b.Loop() {
						var err error
						if r, err = runShopMission(context.Background(), v, s.style, c != "off", strat, s.prices); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(r.prompts[1]), "turn2-tokens")
					b.ReportMetric(float64(r.prompts[9]), "turn10-tokens")
					b.ReportMetric(float64(r.usage.InputTokens), "prompt-tokens")
					b.ReportMetric(float64(r.usage.TotalTokens), "total-tokens")
					b.ReportMetric(float64(r.usage.CacheReadTokens), "cache-read-tokens")
					b.ReportMetric(float64(r.usage.CacheWriteTokens), "cache-write-tokens")
					b.ReportMetric(r.usage.CostUSD*1e6, "µUSD")
				})
			}
		}
	}
}

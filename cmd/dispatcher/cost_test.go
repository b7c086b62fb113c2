package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// The mission summary shows prompt-cache reads and writes and the estimated
// cost when the models report them, and leaves them out otherwise.
func TestSummaryShowsCacheAndCost(t *testing.T) {
	var b bytes.Buffer
	printStep(&b, &messages.Step{Return: 1, Usage: messages.Usage{Turns: 2, Requests: 3, InputTokens: 5000, OutputTokens: 200,
		CacheReadTokens: 3500, CacheWriteTokens: 1200, CostUSD: 0.01234, ToolCalls: 4, Duration: time.Second}})
	want := "turns 2 · llm requests 3 · tokens 5000 in / 200 out (cache 3500 read / 1200 written) · est. cost $0.0123 · tool calls 4 · 1s"
	if !strings.Contains(b.String(), want) {
		t.Errorf("summary lacks %q:\n%s", want, b.String())
	}
	b.Reset()
	printStep(&b, &messages.Step{Return: 1, Usage: messages.Usage{Turns: 1, Requests: 1, InputTokens: 10, OutputTokens: 2}})
	if s := b.String(); strings.Contains(s, "cache") || strings.Contains(s, "cost") {
		t.Errorf("summary shows unknown cache or cost figures:\n%s", s)
	}
}

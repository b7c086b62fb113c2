package main

import (
	"context"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/rs/zerolog"

	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/internal/fleettest/agentworker"
	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// TestViewerInBrowserShowsPlanAndEmits opens a running mission whose first
// program emitted a value and marked a plan step done, while the model is
// still thinking about turn 2: the page shows the plan's state and the
// emitted value, its firewalled key masked.
func TestViewerInBrowserShowsPlanAndEmits(t *testing.T) {
	srv := fleettest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	release := make(chan struct{})
	var once sync.Once
	finish := func() { once.Do(func() { close(release) }) }
	defer finish()
	model := llm.Func(func(ctx context.Context, req llm.Request) (*llm.Response, error) {
		if req.Turn == 1 {
			return &llm.Response{Content: "```clojure\n(emit {:partial 42 :_secret ctx/_key :leak ctx/_key})\n(step-done \"1\" \"counted 42\")\n{:n 42}\n```"}, nil
		}
		select { // turn 2: still thinking while the page is looked at
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &llm.Response{Content: "```clojure\n(step-done \"2\" \"reported\")\n(return {:n 42})\n```"}, nil
	})
	agentworker.Start(ctx, t, srv.Conn(), model)
	client, err := fleet.NewClient(ctx, srv.Conn(), fleet.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	m := &messages.Mission{ID: messages.NewMissionID(), Kind: messages.KindAgent,
		Context: map[string]any{"_key": "s-77-hidden-value"},
		Agent:   &messages.AgentSpec{Prompt: "Count.", Signature: "{n :int}", Plan: []string{"Count the things", "Report"}}}
	if _, err := client.Submit(ctx, m); err != nil {
		t.Fatal(err)
	}
	v, err := newViewer(client, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	web := httptest.NewServer(v.Handler())
	t.Cleanup(web.Close)

	bctx := openBrowser(t, ctx)
	if _, err := chromedp.Run(bctx, chromedp.Navigate(web.URL+"/missions/"+m.ID)); err != nil {
		t.Fatalf("browser: open the mission: %v", err)
	}
	// the page refreshes every 2 s: wait for the step marked done
	if _, err := chromedp.Run(bctx, chromedp.WaitVisible(`#trace .events pre.emit`)); err != nil {
		t.Fatalf("browser: the emitted value: %v", err)
	}
	wctx, wcancel := context.WithTimeout(bctx, 20*time.Second)
	defer wcancel()
	if _, err := chromedp.Run(wctx, chromedp.Poll[bool](`document.querySelectorAll("#trace .events pre.plan").length >= 2`)); err != nil {
		t.Fatalf("browser: the plan after step 1: %v", err)
	}
	text, err := chromedp.Run(bctx, chromedp.Text("#trace"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"plan, 0/2 steps done", "[ ] 1. Count the things",
		"emitted", `"_secret":"<Firewalled>"`, `"leak":"<Firewalled>"`, `"partial":42`,
		"plan: step 1 done, 1/2 steps done", "[x] 1. Count the things — counted 42", "[ ] 2. Report",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the page lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "s-77-hidden") {
		t.Error("a firewalled value reached the page")
	}

	// once the mission ends, its page shows the Step with the plan's end state
	finish()
	if _, err := chromedp.Run(wctx, chromedp.WaitVisible(`#trace .step pre.plan`)); err != nil {
		t.Fatalf("browser: the finished mission's plan: %v", err)
	}
	text, err = chromedp.Run(bctx, chromedp.Text("#trace .step"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"plan, 2/2 steps done", "[x] 1. Count the things — counted 42", "[x] 2. Report — reported"} {
		if !strings.Contains(text, want) {
			t.Errorf("the finished mission's page lacks %q:\n%s", want, text)
		}
	}
}

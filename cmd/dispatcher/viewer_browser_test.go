package main

import (
	"context"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/rs/zerolog"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// chromium returns the path of a headless Chromium, failing the test with
// the command that installs one when there is none.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium-headless-shell", "chromium", "headless_shell", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no headless Chromium: install it with `apt-get install -y chromium-headless-shell` (scripts/test-deps.sh does)")
	return ""
}

// openBrowser starts headless Chromium (chromium) for the test, with opts
// added to chromedp's defaults, and returns its context, closed as ctx
// ends or the test does.
func openBrowser(t *testing.T, ctx context.Context, opts ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	all := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium(t)), chromedp.NoSandbox,
		chromedp.Flag("disable-dev-shm-usage", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, append(all, opts...)...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelBrowser()
		cancelAlloc()
	})
	return bctx
}

// browserSteps returns a function that runs one action in the browser
// bctx, failing the test with what the action was for.
func browserSteps(t *testing.T, bctx context.Context) func(what string, a chromedp.Action[chromedp.Void]) {
	return func(what string, a chromedp.Action[chromedp.Void]) {
		t.Helper()
		if _, err := chromedp.Run(bctx, a); err != nil {
			t.Fatalf("browser: %s: %v", what, err)
		}
	}
}

// TestViewerInBrowser drives headless Chromium against the viewer serving
// a real mission: the list shows it, a click shows its trace (turns,
// programs, tool calls with sub-agent nested, the feedback, firewalled
// values masked), and a mission submitted while the page is open appears
// without a reload. The screenshot is saved in the test's temp dir
// (PTC_VIEWER_SCREENSHOT=path copies it there too, e.g. docs/img/viewer.png).
func TestViewerInBrowser(t *testing.T) {
	f := startObservedFleet(t)
	srv := f.serveViewer(t)

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	bctx := openBrowser(t, ctx, chromedp.WindowSize(1500, 1300))

	row := `#missions tr[data-id="` + f.id + `"]`
	step := browserSteps(t, bctx)
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(bctx, chromedp.Text(sel))
		if err != nil {
			t.Fatalf("browser: text of %s: %v", sel, err)
		}
		return s
	}
	count := func(sel string) int {
		t.Helper()
		n, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll(`+strconv.Quote(sel)+`).length`))
		if err != nil {
			t.Fatalf("browser: count %s: %v", sel, err)
		}
		return n
	}
	// A label no mission has: the filter, from the address, lists none.
	step("open the viewer filtered", chromedp.Navigate(srv.URL+"/?label=team%3Dother"))
	step("nothing listed", chromedp.WaitVisible(`#missions tr.empty`))
	// The first screen shows the newest mission without a click.
	step("open the viewer", chromedp.Navigate(srv.URL+"/"))
	step("the mission is listed", chromedp.WaitVisible(row))
	step("the newest mission's trace shows on the first screen", chromedp.WaitVisible(`#trace .turn[data-turn="2"] .tool-call`))
	if first := text("#trace h2"); first != f.id {
		t.Errorf("first screen shows %q, want the newest mission %s", first, f.id)
	}
	if loc, err := chromedp.Run(bctx, chromedp.Evaluate[string](`location.pathname`)); err != nil || loc != "/missions/"+f.id {
		t.Errorf("address of the first screen: %q %v", loc, err)
	}
	step("select it", chromedp.Click(row))
	step("its trace shows", chromedp.WaitVisible(`#trace .turn[data-turn="2"] .tool-call`))
	listText, traceText := text("#missions"), text("#trace")
	turns, toolCalls := count("#trace .turn"), count("#trace .tool-call")
	shot, err := chromedp.Run(bctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("browser: screenshot: %v", err)
	}
	path := filepath.Join(t.TempDir(), "viewer.png")
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", path, len(shot))
	if dst := os.Getenv("PTC_VIEWER_SCREENSHOT"); dst != "" {
		if err := os.WriteFile(dst, shot, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if len(shot) < 10000 || string(shot[1:4]) != "PNG" {
		t.Errorf("screenshot is not a PNG of the page (%d bytes)", len(shot))
	}
	if !strings.Contains(listText, f.id) || !strings.Contains(listText, "succeeded") || !strings.Contains(listText, "viewer-worker") ||
		!strings.Contains(listText, "reporter") || !strings.Contains(listText, "Report on paid orders.") || !strings.Contains(listText, "team=shop") {
		t.Errorf("mission list: %s", listText)
	}
	// Two turns of the mission and one of its sub-agent; four tool calls
	// (three in turn 2, one in the sub-agent) and one in turn 1.
	if turns != 3 || toolCalls != 5 {
		t.Errorf("%d turns and %d tool calls on the page, want 3 and 5", turns, toolCalls)
	}
	for _, want := range []string{
		"turn 1", "turn 2", `(def paid (tool/list_orders {:status "paid"}))`, `(+ 1 "x")`,
		"expected number", "feedback the model received", "Turn 2 of 5",
		"list_orders", `{"status":"paid"}`, "get_customer", "best_customer", "sub-agent best_customer", "list_customers",
		`"_phone":"<Firewalled>"`, "Margaret Turing", "tokens in / out", "360 / 90",
		"reporter · Report on paid orders. · team=shop", "duration", "run",
	} {
		if !strings.Contains(traceText, want) {
			t.Errorf("the trace on the page lacks %q", want)
		}
	}
	// A tool result over 256 KiB is kept in the trace by reference; the
	// page says what and where instead of the reference's JSON.
	ref, err := chromedp.Run(bctx, chromedp.Evaluate[string](`preview({"$object": {"bucket": "tool_results_shop", "name": "m1.list_orders.c1", "size": 386155, "digest": "SHA-256=x"}})`))
	if want := "(386155 bytes, kept in object store tool_results_shop as m1.list_orders.c1)"; err != nil || ref != want {
		t.Errorf("a result kept by reference shows as %q (%v), want %q", ref, err, want)
	}
	if plain, err := chromedp.Run(bctx, chromedp.Evaluate[string](`[preview({"$object": 1, "other": 2}), preview({"$object": 1})].join(" ")`)); err != nil || plain != `{"$object":1,"other":2} {"$object":1}` {
		t.Errorf("a map that is no reference shows as %q (%v)", plain, err)
	}
	if strings.Contains(traceText, "+1-555-") || strings.Contains(listText, "+1-555-") {
		t.Error("a firewalled value reached the page")
	}
	if t.Failed() {
		t.Logf("trace text:\n%s", traceText)
	}

	// The list is live: a mission submitted now appears without a reload.
	m := &messages.Mission{ID: messages.NewMissionID(), Kind: messages.KindAgent,
		Agent:   &messages.AgentSpec{Prompt: "Find the best customer of {{region}}.", Signature: "(region :string) -> {name :string}", Tools: []string{"list_customers"}},
		Context: map[string]any{"region": "south"}, Tools: []string{"list_customers"}}
	if st, err := f.client.Run(ctx, m); err != nil || st.Fail != nil {
		t.Fatalf("second mission: %v %+v", err, st)
	}
	wctx, wcancel := context.WithTimeout(bctx, 15*time.Second)
	defer wcancel()
	if _, err := chromedp.Run(wctx, chromedp.WaitVisible(`#missions tr[data-id="`+m.ID+`"].state-succeeded`)); err != nil {
		t.Errorf("a new mission did not appear in the open page: %v\n%s\n%s", err, text("#missions"), text("#updated"))
	}
}

// TestViewerInBrowserLargeStep opens a mission whose Step is about 6 MB:
// the page shows the preview of the return with its size and a link that
// downloads the whole Step.
func TestViewerInBrowserLargeStep(t *testing.T) {
	client, id, _ := runLargeStepMission(t)
	v, err := newViewer(client, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(v.Handler())
	t.Cleanup(srv.Close)

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	bctx := openBrowser(t, ctx)

	if _, err := chromedp.Run(bctx, chromedp.Navigate(srv.URL+"/missions/"+id)); err != nil {
		t.Fatalf("browser: open the mission: %v", err)
	}
	if _, err := chromedp.Run(bctx, chromedp.WaitVisible(`#trace a.full`)); err != nil {
		t.Fatalf("browser: the full link: %v", err)
	}
	href, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.querySelector("#trace a.full").getAttribute("href")`))
	if err != nil || href != "/api/missions/"+id+"?full=1" {
		t.Errorf("full link %q %v", href, err)
	}
	text, err := chromedp.Run(bctx, chromedp.Text("#trace"))
	if err != nil {
		t.Fatalf("browser: text of the trace: %v", err)
	}
	for _, want := range []string{"download the whole Step", "bytes", "abcdefghij", `"cut"`} {
		if !strings.Contains(text, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if len(text) > 256<<10 {
		t.Errorf("the page holds %d bytes of text, want the preview", len(text))
	}
}

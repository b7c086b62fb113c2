package main

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/ptcfleet/ptc/internal/cli"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// uiFiles are the viewer's page template, script and style sheet, served
// as they are: no build step.
//
//go:embed ui
var uiFiles embed.FS

// viewerStates are the states the viewer's filter offers.
var viewerStates = messages.States()

// viewer serves the mission viewer: a page listing missions (refreshed
// live by a small script) and one mission's trace, and the JSON API the
// script reads. It reads only what a dispatcher may read: statuses,
// results and events.
type viewer struct {
	client *fleet.Client
	page   *template.Template
	log    zerolog.Logger
	// by names who decides the approvals made on the page (the audit's
	// decided_by).
	by string
	// stalledAfter is how long after its decision a waiting mission with
	// no call pending is offered to be queued again (missionView).
	stalledAfter time.Duration
}

func newViewer(client *fleet.Client, log zerolog.Logger) (*viewer, error) {
	page, err := template.New("index.html").Funcs(template.FuncMap{"dur": func(ns int64) string { return fmtDuration(time.Duration(ns)) }, "labels": labelText}).ParseFS(uiFiles, "ui/index.html")
	if err != nil {
		return nil, err
	}
	return &viewer{client: client, page: page, log: log, by: "viewer"}, nil
}

// listItem is one mission in the JSON list.
type listItem struct {
	ID         string    `json:"id"`
	State      string    `json:"state"`
	Attempt    int       `json:"attempt"`
	Worker     string    `json:"worker,omitempty"`
	Reason     string    `json:"reason,omitempty"`
	Submitted  time.Time `json:"submitted"`
	Updated    time.Time `json:"updated"`
	DurationNs int64     `json:"duration_ns"`
	// What the mission is (its status's summary).
	Kind     string            `json:"kind,omitempty"`
	Agent    string            `json:"agent,omitempty"`
	Prompt   string            `json:"prompt,omitempty"`
	Labels   map[string]string `json:"labels,omitempty"`
	Scripted bool              `json:"scripted,omitempty"`
}

func listItems(ms []fleet.MissionInfo) []listItem {
	out := make([]listItem, 0, len(ms))
	for _, m := range ms {
		it := listItem{ID: m.MissionID, State: m.State, Attempt: m.Attempt, Worker: m.Worker, Reason: m.Reason,
			Submitted: m.Submitted, Updated: m.UpdatedAt.UTC(), DurationNs: int64(m.Duration)}
		if sm := m.Summary; sm != nil {
			it.Kind, it.Agent, it.Prompt, it.Labels, it.Scripted = sm.Kind, sm.Agent, sm.Prompt, sm.Labels, sm.Scripted
		}
		out = append(out, it)
	}
	return out
}

// Handler returns the viewer's routes: GET / and /missions/{id} (the
// page), /api/missions?state=&limit= (the list as JSON), /api/missions/{id}
// (one mission's view as JSON, missionView.MarshalJSON; a large Step
// cut to a preview unless ?full=1), /api/approvals?tool=&service=&submitter=&when=
// (the calls waiting for a decision across the fleet, pendingOut), POST
// /api/missions/{id}/decide and /api/approvals/decide (decisions), and
// /static/;
// on a loopback address only for a loopback Host (cli.LoopbackHost).
func (v *viewer) Handler() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(uiFiles, "ui")
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /{$}", v.servePage)
	mux.HandleFunc("GET /missions/{id}", v.servePage)
	mux.HandleFunc("GET /api/missions", v.serveList)
	mux.HandleFunc("GET /api/missions/{id}", v.serveMission)
	mux.HandleFunc("POST /api/missions/{id}/decide", v.serveDecide)
	mux.HandleFunc("GET /api/approvals", v.servePending)
	mux.HandleFunc("POST /api/approvals/decide", v.serveDecideMany)
	return cli.LoopbackHost(mux)
}

// list lists the missions the request's query asks for. It answers a
// bad query (400) or a failed listing itself and then returns false.
func (v *viewer) list(w http.ResponseWriter, r *http.Request) (fleet.ListOptions, []fleet.MissionInfo, bool) {
	opts, err := v.listOptions(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return opts, nil, false
	}
	ms, err := v.client.List(r.Context(), opts)
	if err != nil {
		v.fail(w, err)
		return opts, nil, false
	}
	return opts, ms, true
}

func (v *viewer) listOptions(r *http.Request) (fleet.ListOptions, error) {
	var o fleet.ListOptions
	if s := r.URL.Query().Get("state"); s != "" {
		o.States = []string{s}
	}
	if l := r.URL.Query().Get("label"); l != "" {
		labels, err := parseLabels(l)
		if err != nil {
			return o, err
		}
		o.Labels = labels
	}
	if l := r.URL.Query().Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 {
			return o, errors.New("limit must be a positive number")
		}
		o.Limit = n
	}
	return o, nil
}

func (v *viewer) servePage(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if id != "" && !messages.ValidMissionID(id) {
		http.Error(w, "not a mission id (a ULID)", http.StatusNotFound)
		return
	}
	opts, ms, ok := v.list(w, r)
	if !ok {
		return
	}
	state := ""
	if len(opts.States) == 1 {
		state = opts.States[0]
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := v.page.Execute(w, map[string]any{"Missions": listItems(ms), "Selected": id, "States": viewerStates, "State": state,
		"Label": r.URL.Query().Get("label")}); err != nil {
		v.log.Warn().Err(err).Msg("viewer page not written")
	}
}

func (v *viewer) serveList(w http.ResponseWriter, r *http.Request) {
	_, ms, ok := v.list(w, r)
	if !ok {
		return
	}
	writeJSON(w, listItems(ms))
}

func (v *viewer) serveMission(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !messages.ValidMissionID(id) {
		http.Error(w, "not a mission id (a ULID)", http.StatusNotFound)
		return
	}
	mv, err := loadView(r.Context(), v.client, id)
	if err != nil {
		v.fail(w, err)
		return
	}
	mv.Preview = r.URL.Query().Get("full") != "1"
	mv.StalledAfter = v.stalledAfter
	if !mv.Preview {
		w.Header().Set("Content-Disposition", `attachment; filename="`+id+`.json"`)
	}
	writeJSON(w, mv)
}

// decideRequest is the body of POST /api/missions/{id}/decide.
type decideRequest struct {
	Call    string          `json:"call"`
	Approve bool            `json:"approve"`
	Args    json.RawMessage `json:"args,omitempty"`
	Reason  string          `json:"reason,omitempty"`
}

// queuedAgain answers a decision that queued a stalled mission again.
type queuedAgain struct {
	QueuedAgain bool   `json:"queued_again"`
	Message     string `json:"message"`
}

// maxDecideBody bounds a decision's body.
const maxDecideBody = 64 << 10

// serveDecide approves or denies a call (the page's Approve and Deny
// buttons), or queues a stalled mission again (its Queue again button: a
// decision naming no call). It takes only a JSON body, which a page of another origin
// cannot send without the browser asking first, and decides with the
// viewer's NATS rights: without the approver role the decision is refused
// by the NATS server and the error is shown.
func (v *viewer) serveDecide(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !messages.ValidMissionID(id) {
		http.Error(w, "not a mission id (a ULID)", http.StatusNotFound)
		return
	}
	var req decideRequest
	if !readDecision(w, r, maxDecideBody, &req) {
		return
	}
	d := fleet.Decision{Approve: req.Approve, Call: req.Call, Reason: req.Reason, By: v.by}
	if req.Approve && len(req.Args) > 0 && string(req.Args) != "null" {
		args, err := parseDecisionArgs(string(req.Args))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		d.Args = args
	}
	a, err := v.client.Decide(r.Context(), id, d)
	switch {
	case errors.Is(err, fleet.ErrQueuedAgain):
		// a stalled mission (its wake lost) resumes with the decision
		// recorded before: what the page's Queue again asks for
		writeJSON(w, queuedAgain{QueuedAgain: true, Message: err.Error()})
		return
	case errors.Is(err, fleet.ErrNoPendingCall):
		http.Error(w, err.Error(), http.StatusConflict)
		return
	case err != nil:
		v.fail(w, err)
		return
	}
	writeJSON(w, approvalItems([]*messages.Approval{a})[0])
}

// readDecision decodes a decision's body, at most limit bytes of JSON
// with no unknown field, into req, or answers the request with why it
// cannot and returns false. Only a JSON body is taken: a page of another
// origin cannot send one without the browser asking first.
func readDecision(w http.ResponseWriter, r *http.Request, limit int64, req any) bool {
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		http.Error(w, "a decision is a JSON body (Content-Type: application/json)", http.StatusUnsupportedMediaType)
		return false
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit))
	dec.DisallowUnknownFields()
	if err := dec.Decode(req); err != nil {
		http.Error(w, "decision: "+err.Error(), http.StatusBadRequest)
		return false
	}
	return true
}

// viewerPendingLimit bounds the waiting calls the page lists.
const viewerPendingLimit = 100

// servePending answers the calls waiting for a decision across the
// fleet that the query's filter selects (pendingQuery; none: every call),
// the longest waiting first: at most viewerPendingLimit of them, and how
// many it selects in all, for the page's list with Approve selected,
// Deny selected and, for a filter, Approve all and Deny all of them.
func (v *viewer) servePending(w http.ResponseWriter, r *http.Request) {
	f, err := pendingQuery(r.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	as, n, err := v.client.ListPending(r.Context(), f, viewerPendingLimit)
	if err != nil {
		v.fail(w, err)
		return
	}
	writeJSON(w, pendingOut{Waiting: n, Approvals: approvalItems(as)})
}

// pendingQuery reads the page's filter of the waiting calls from a query:
// tool, service, submitter, and when, a condition on an argument as JSON
// (parseCond).
func pendingQuery(q url.Values) (fleet.PendingFilter, error) {
	f := fleet.PendingFilter{Tool: q.Get("tool"), Service: q.Get("service"), Submitter: q.Get("submitter")}
	var err error
	if f.When, err = parseCond(q.Get("when")); err != nil {
		return f, fmt.Errorf("when: %w", err)
	}
	return f, nil
}

// decideManyRequest is the body of POST /api/approvals/decide: the
// decision, and either the calls ticked, each by mission and call id, or
// the filter the page listed with (pendingQuery) and how many calls it
// counted: the longest waiting of them that still wait are decided, at
// most that many, never more than the person saw counted.
type decideManyRequest struct {
	Approve bool   `json:"approve"`
	Reason  string `json:"reason,omitempty"`
	Calls   []struct {
		MissionID string `json:"mission_id"`
		Call      string `json:"call"`
	} `json:"calls"`
	Filter *struct {
		Tool      string                 `json:"tool"`
		Service   string                 `json:"service"`
		Submitter string                 `json:"submitter"`
		When      *messages.ApprovalCond `json:"when"`
		Max       int                    `json:"max"`
	} `json:"filter"`
}

// maxDecideManyBody bounds a decision of many calls' body: fleet.MaxList
// calls, each a mission and a call id.
const maxDecideManyBody = maxDecideBody + fleet.MaxList*256

// serveDecideMany approves or denies the calls named that still wait
// (the page's Approve selected and Deny selected), or those its filter
// selects (Approve all and Deny all), and answers what it did with each
// (decidedOut); a call that no longer waits is neither. As serveDecide,
// it takes only a JSON body and decides with the viewer's NATS rights.
func (v *viewer) serveDecideMany(w http.ResponseWriter, r *http.Request) {
	var req decideManyRequest
	if !readDecision(w, r, maxDecideManyBody, &req) {
		return
	}
	var f fleet.PendingFilter
	switch {
	case len(req.Calls) > 0 && req.Filter != nil:
		http.Error(w, "decision: calls and filter both given: name the calls or give the filter", http.StatusBadRequest)
		return
	case req.Filter != nil:
		if req.Filter.Max < 1 {
			http.Error(w, "decision: filter.max: the number of calls the filter counted, at least 1 (it bounds what is decided)", http.StatusBadRequest)
			return
		}
		f = fleet.PendingFilter{Tool: req.Filter.Tool, Service: req.Filter.Service, Submitter: req.Filter.Submitter,
			When: req.Filter.When, Max: req.Filter.Max}
	case len(req.Calls) == 0:
		http.Error(w, "decision: no call named", http.StatusBadRequest)
		return
	default:
		f.Calls = make([]fleet.CallRef, len(req.Calls))
		for i, c := range req.Calls {
			f.Calls[i] = fleet.CallRef{MissionID: c.MissionID, Call: c.Call}
		}
	}
	out, err := v.client.DecidePending(r.Context(), f, fleet.Decision{Approve: req.Approve, Reason: req.Reason, By: v.by})
	if err != nil {
		v.fail(w, err)
		return
	}
	writeJSON(w, decidedItems(out))
}

func (v *viewer) fail(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, errMissionNotFound):
		http.Error(w, err.Error(), http.StatusNotFound)
	case errors.Is(err, messages.ErrInvalid), errors.Is(err, fleet.ErrInvalidSelection):
		http.Error(w, err.Error(), http.StatusBadRequest)
	default:
		v.log.Warn().Err(err).Msg("viewer request failed")
		http.Error(w, err.Error(), http.StatusBadGateway)
	}
}

// parseLabels parses "k=v,k2=v2" (a list or viewer label filter).
func parseLabels(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		if kv = strings.TrimSpace(kv); kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("label %q is not key=value", kv)
		}
		out[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return out, nil
}

// labelText renders labels as "k=v k2=v2", sorted.
func labelText(labels map[string]string) string {
	parts := make([]string, 0, len(labels))
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		parts = append(parts, k+"="+labels[k])
	}
	return strings.Join(parts, " ")
}

func writeJSON(w http.ResponseWriter, v any) {
	b, err := marshalJSON(v, "")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(b)
}

// writeJSONTo writes v as JSON to w, indented by indent ("": one line
// per value).
func writeJSONTo(w io.Writer, v any, indent string) error {
	b, err := marshalJSON(v, indent)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// marshalJSON encodes v as JSON, indented by indent (none when empty),
// without HTML escapes: "<Firewalled>" and "->" stay readable.
func marshalJSON(v any, indent string) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", indent)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// serveUI serves the viewer on ln until ctx ends; by names who decides
// the approvals made on its pages, and stalledAfter how long after its
// decision a waiting mission with no call pending is offered to be
// queued again (the fleet's -stalled-after; 0: the default).
func serveUI(ctx context.Context, client *fleet.Client, ln net.Listener, log zerolog.Logger, by string, stalledAfter time.Duration) error {
	v, err := newViewer(client, log)
	if err != nil {
		return err
	}
	v.by, v.stalledAfter = "viewer:"+by, stalledAfter
	return cli.ServeListener(ctx, ln, v.Handler())
}

// listenUI takes the viewer's address (-ui-addr): a busy default gives way
// to a free port, said on the log (cli.ListenFlag).
func listenUI(fs *flag.FlagSet, log zerolog.Logger) (net.Listener, error) {
	l, err := cli.ListenFlag(fs, "ui-addr")
	if err != nil {
		return nil, err
	}
	if l.Listener == nil {
		return nil, errors.New("ui-addr is empty: the viewer needs an address")
	}
	l.WarnBusy(&log, "viewer")
	return l.Listener, nil
}

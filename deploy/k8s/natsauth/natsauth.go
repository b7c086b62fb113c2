// Package natsauth is the one source of the fleet's NATS accounts, users and
// permissions. The auth.conf of deploy/k8s/nats/config.yaml and the
// accounts of deploy/k8s/helm/nats-values.yaml are generated from it
// (TestNATSAuthGenerated fails when either drifts; run it with -update to
// rewrite them), and the permissions derive from pkg/messages' stream,
// bucket and subject names, so a renamed subject cannot leave a stale
// permission behind.
//
// Each tenant is a NATS account with its own JetStream layout, workers and
// tool service users: accounts share nothing, so one tenant's submitters
// can neither see nor touch another's missions, results, status, contexts
// or events. Inside an account each submitter is a user of its own whose
// name is its submitter identity (a subject token of its missions'
// subjects and status keys), confined to its own missions unless granted
// every submitter's (Submitter.SeesAll). Each role gets only the JetStream
// API subjects it needs, per stream, consumer and submitter: streams,
// consumers and buckets are created by the admin user (the `worker setup`
// Job), never by workers or submitters.
package natsauth

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// Account is one tenant: a NATS account with JetStream and the fleet's
// users.
type Account struct {
	// Name is the NATS account name ("PTC").
	Name string
	// UserPrefix prefixes every user and password variable of the account
	// ("" for the shipped account: users dispatcher, worker, ...; "acme"
	// gives acme-dispatcher and NATS_ACME_DISPATCHER_PASSWORD).
	UserPrefix string
	// ToolServices are the tool services with a user in this account, by
	// micro service name; the user is <service>tools. Workers may call
	// only these services' tools.
	ToolServices []string
	// Submitters are the account's submitters, a NATS user each.
	Submitters []Submitter
}

// Submitter is one submitter of an account: a user whose name (with the
// account's UserPrefix) is the submitter identity its missions carry.
type Submitter struct {
	// Name is the submitter's name; its user is named like the other
	// users of the account ("dispatcher", or "acme-dispatcher" with the
	// prefix "acme"), and that user name is the submitter identity.
	Name string
	// SeesAll grants reading, watching and cancelling the missions of
	// every submitter of the account (an operator's or a viewer's user):
	// clients set fleet.ClientConfig.AllSubmitters.
	SeesAll bool
}

// Shipped is the layout of deploy/k8s: one tenant account.
func Shipped() []Account {
	// shop: the example tools (fleet/shoptools.yaml); mcp: the MCP bridge
	// (examples/mcpbridge.yaml), whose servers are one service named mcp.
	// dispatcher: the one submitter, which the dispatcher Job and the
	// README's commands use.
	return []Account{{Name: "PTC", ToolServices: []string{"shop", "mcp"}, Submitters: []Submitter{{Name: RoleDispatcher}}}}
}

// Role names.
const (
	// RoleDispatcher is the name of the shipped submitter (whose role is
	// SubmitterRole(RoleDispatcher)).
	RoleDispatcher = "dispatcher"
	RoleWorker     = "worker"
	// RoleApprover decides tool calls that wait for approval
	// (docs/approvals.md); submitters and tool services cannot.
	RoleApprover = "approver"
	RoleAdmin    = "admin"
)

// SubmitterRole is the Role of submitter name's user.
func SubmitterRole(name string) string { return "submitter:" + name }

// Inbox is the inbox prefix a role's connections use
// (PTC_NATS_INBOX_PREFIX); a role may read only its own inboxes. A
// submitter's is named after its user (Inbox(user name)).
func Inbox(role string) string { return "_INBOX_" + role }

// User is one user of an account with its permissions; nil lists mean
// "no restriction" (the admin).
type User struct {
	Name        string
	PasswordVar string
	// Role is SubmitterRole(name), RoleWorker, RoleApprover, RoleAdmin or
	// "tools:<service>".
	Role       string
	Restricted bool
	PubAllow   []string
	PubDeny    []string
	SubAllow   []string
	// Responses, when set, lets the user answer the requests it receives.
	Responses *Responses
}

// Responses is what a user that answers requests may publish on each
// request's reply subject: Max messages within Expires of the request.
type Responses struct {
	Max     int
	Expires time.Duration
}

// What a tool service may send on a call's reply subject: progress
// messages before its answer (fleet.ToolReplyMessages) for as long as a
// call may last (fleet.ToolReplyWindow).
const (
	ResponseMax     = fleet.ToolReplyMessages
	ResponseExpires = fleet.ToolReplyWindow
)

// cancelResponses: a worker answers a cancel request once, within the
// time a cancel takes to carry out.
var cancelResponses = &Responses{Max: 1, Expires: 30 * time.Second}

// Users returns the users of account a.
func (a Account) Users() []User {
	name := func(role string) string {
		if a.UserPrefix == "" {
			return role
		}
		return a.UserPrefix + "-" + role
	}
	pw := func(role string) string {
		v := "NATS_" + strings.ToUpper(role) + "_PASSWORD"
		if a.UserPrefix != "" {
			v = "NATS_" + strings.ToUpper(a.UserPrefix) + "_" + strings.ToUpper(role) + "_PASSWORD"
		}
		return strings.ReplaceAll(v, "-", "_")
	}
	var users []User
	for _, s := range a.Submitters {
		// The user name is the submitter identity; a user granted every
		// submitter's missions reads them with the wildcard token.
		user, reads := name(s.Name), name(s.Name)
		if s.SeesAll {
			reads = messages.AllSubmitters
		}
		users = append(users, User{Name: user, PasswordVar: pw(s.Name), Role: SubmitterRole(s.Name), Restricted: true,
			PubAllow: submitterPublish(user, reads),
			// Await and Watch wait for a mission's result (as the results
			// stream republishes it once stored, or as published) and
			// next event on its subjects.
			SubAllow: []string{Inbox(user) + ".>", messages.StoredResultSubject(reads, "*"), messages.ResultSubject(reads, "*"), messages.EventFilter(reads, "*")}})
	}
	users = append(users, User{Name: name(RoleWorker), PasswordVar: pw(RoleWorker), Role: RoleWorker, Restricted: true,
		PubAllow: workerPublish(a.ToolServices),
		// Missions as MISSIONS stored them (their headers, republished by
		// the server) ring the bell of their lane (fair share): the
		// missions a worker takes anyway. Submits and wakes as published
		// do where MISSIONS does not republish (a layout set up before it
		// did).
		SubAllow: []string{Inbox(RoleWorker) + ".>", messages.CancelWildcard, messages.StopWildcard, messages.QueuedWildcard,
			messages.SubmitWildcard, messages.WakeWildcard, messages.WokenWildcard,
			"$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES." + messages.StreamMissions + ".*"},
		// the answers to cancel requests, which workers carry out
		Responses: cancelResponses})
	users = append(users, User{Name: name(RoleApprover), PasswordVar: pw(RoleApprover), Role: RoleApprover, Restricted: true,
		PubAllow: approverPublish(),
		// a wake subject, but the fleet's own: each tick starts a sweep
		// of the whole approval bucket, which only PARKED's schedule asks for
		PubDeny:  []string{messages.SweepTickSubject},
		SubAllow: []string{Inbox(RoleApprover) + ".>", messages.StoredResultSubject("*", "*"), messages.ResultSubject("*", "*"), messages.EventFilter("*", "*")}})
	for _, svc := range a.ToolServices {
		users = append(users, User{Name: name(svc + "tools"), PasswordVar: pw(svc + "tools"), Role: "tools:" + svc, Restricted: true,
			PubAllow:  toolServicePublish(svc),
			SubAllow:  []string{messages.ToolSubject(svc, "*"), "$SRV.>", Inbox(svc+"tools") + ".>"},
			Responses: &Responses{Max: ResponseMax, Expires: ResponseExpires}})
	}
	return append(users, User{Name: name(RoleAdmin), PasswordVar: pw(RoleAdmin), Role: RoleAdmin})
}

const api = "$JS.API."

func streamInfo(streams ...string) []string {
	var out []string
	for _, s := range streams {
		out = append(out, api+"STREAM.INFO."+s)
	}
	return out
}

// directGet allows reading single messages of stream s (direct get and
// the message get API): results, status entries, object metadata.
func directGet(s string) []string {
	return []string{api + "DIRECT.GET." + s + ".>", api + "STREAM.MSG.GET." + s}
}

// directBatch allows the direct gets of stream s by subject (directGet)
// and those whose request body names the subjects: the next message on
// a subject, or the last message of each subject matching a wildcard
// (multi_last). The body's subjects are not checked by permissions: a
// role given it may read any message of s.
func directBatch(s string) []string {
	return append(directGet(s), api+"DIRECT.GET."+s)
}

// chunkRead allows reading an object store's objects, stream s, with
// direct gets alone: its metadata by subject, its chunks one after the
// other (a direct get of the next message on a chunk subject, asked in
// the request's body). No consumer is needed.
func chunkRead(s string) []string { return directBatch(s) }

// orderedRead allows an ordered (ephemeral, pull) consumer on stream s: to
// create it, pull from it, read and delete it.
func orderedRead(s string) []string {
	return []string{api + "CONSUMER.CREATE." + s + ".>", api + "CONSUMER.MSG.NEXT." + s + ".>",
		api + "CONSUMER.INFO." + s + ".>", api + "CONSUMER.DELETE." + s + ".>"}
}

var (
	kvStream        = "KV_" + messages.BucketStatus
	approvalsStream = "KV_" + messages.BucketApprovals
	objStream       = "OBJ_" + messages.BucketContext
	resObjStream    = "OBJ_" + messages.BucketResults
	// the fleet-wide budgets: workers read the limits and change the
	// spend; only the administrator sets limits (dispatcher budget set)
	budgetLimitsStream = "KV_" + messages.BucketBudgetLimits
	budgetSpendStream  = "KV_" + messages.BucketBudgetSpend
	// the per-submitter quotas: workers read the quotas and take, renew
	// and give back leases; only the administrator sets quotas
	// (dispatcher quota set)
	quotaLimitsStream = "KV_" + messages.BucketQuotaLimits
	quotaLeasesStream = "KV_" + messages.BucketQuotaLeases
)

// bindStreams are the stores a client binds to (fleet.NewClient).
func bindStreams() []string {
	return []string{messages.StreamMissions, messages.StreamParked, messages.StreamResults, messages.StreamEvents, messages.StreamDead,
		kvStream, approvalsStream, objStream, resObjStream}
}

// workerConsumers are the API subjects of verb on the mission consumers:
// each priority's lanes and its consumer of missions queued before lanes.
func workerConsumers(verb string) []string {
	var out []string
	for _, p := range messages.Priorities() {
		out = append(out, api+"CONSUMER."+verb+"."+messages.StreamMissions+"."+fleet.ConsumerName(p))
		for l := range messages.MissionLanes {
			out = append(out, api+"CONSUMER."+verb+"."+messages.StreamMissions+"."+fleet.LaneConsumerName(p, l))
		}
	}
	return out
}

// submitterPublish: submit as user, ask the fleet to cancel, read the
// status, results and events of reads' missions (the user's own, or every
// submitter's: messages.AllSubmitters), store large contexts, and discover
// tools (a mission's tool list is checked before it is submitted; MCP's
// list_tools). Every read is a direct get whose API subject names the
// message's subject, so a permission can hold it to the submitter's own
// subjects; no message get by sequence (whose subject is in the request's
// body), no consumer, no stream, consumer or bucket management, no purge,
// no tool call, and no result or status of any mission: a cancel is
// carried out by a worker.
func submitterPublish(user, reads string) []string {
	l := []string{api + "INFO"}
	l = append(l, streamInfo(bindStreams()...)...)
	l = append(l, workerConsumers("INFO")...)
	get := func(stream, subject string) string { return api + "DIRECT.GET." + stream + "." + subject }
	l = append(l,
		get(messages.StreamResults, messages.ResultSubject(reads, ">")),
		get(kvStream, messages.StatusSubject(reads, ">")),
		// a queued mission, which has no status yet
		get(messages.StreamMissions, messages.SubjectSubmitPrefix+reads+".>"),
		// a mission's events one by one, by number
		get(messages.StreamEvents, messages.SubjectEventPrefix+reads+".>"),
		// storing a context reads the metadata of its object (never a
		// chunk: those are read by sequence)
		get(objStream, "$O."+messages.BucketContext+".M.>"),
	)
	// Submit reads the submitter's quota (a cooperative check of its
	// max_queued; the workers enforce it) and counts its queued missions
	// from MISSIONS' stream info.
	l = append(l, streamInfo(quotaLimitsStream)...)
	l = append(l, directGet(quotaLimitsStream)...)
	// The approvals of a mission are read, not decided (RoleApprover);
	// they are keyed by mission id, so every submitter's are readable.
	l = append(l, directBatch(approvalsStream)...)
	// A Step too large for one message is read from mission_results,
	// chunk by chunk with direct gets by sequence (no consumer).
	l = append(l, chunkRead(resObjStream)...)
	l = append(l,
		messages.SubjectSubmitPrefix+user+".*.*",
		messages.CancelSubject(reads, "*"),
		"$O."+messages.BucketContext+".>",
		"$SRV.INFO",
	)
	return l
}

// approverPublish: what a dispatcher reads (status, results, events,
// approvals), and the decision: a compare-and-set of a call's approval
// record, the approval_decided event, and queueing the suspended mission
// again from its parked message. No submit, no cancel, no tool call.
// Submitters may not publish on the woken subjects (approvers and
// workers may): a woken mission's claim takes it as a wake, with its
// status read at once.
func approverPublish() []string {
	l := []string{api + "INFO"}
	l = append(l, streamInfo(bindStreams()...)...)
	l = append(l, workerConsumers("INFO")...)
	l = append(l, directGet(messages.StreamResults)...)
	l = append(l, directGet(kvStream)...)
	l = append(l, directBatch(approvalsStream)...)
	l = append(l, chunkRead(resObjStream)...)
	// every submitter's missions: queued ones, and their events one by
	// one (the approver's client reads as messages.AllSubmitters)
	l = append(l, api+"DIRECT.GET."+messages.StreamMissions+".>", api+"DIRECT.GET."+messages.StreamEvents+".>")
	// the parked message of a suspended mission, by its subject only
	// (mission.parked.<id>: as an earlier release parked it)
	l = append(l, api+"DIRECT.GET."+messages.StreamParked+"."+messages.SubjectParkPrefix+"*",
		api+"DIRECT.GET."+messages.StreamParked+"."+messages.SubjectParkedPrefix+"*")
	// a wake waiting in PARKED, which copies a parked message: the
	// listing of stalled decisions tells one still to move from one left
	// from an earlier wait by its sequence
	l = append(l, api+"DIRECT.GET."+messages.StreamParked+"."+messages.SubjectWakePrefix+"*.*.*")
	// the same reads from the streams' leaders, where a decision's reads
	// go when no replica answers (a node restarting): a message get names
	// its subject in its body, so it may read any message of the stream,
	// which here is no more than the direct gets above read (PARKED's
	// other messages, the wakes, copy the parked ones)
	l = append(l, api+"STREAM.MSG.GET."+messages.StreamMissions, api+"STREAM.MSG.GET."+messages.StreamEvents,
		api+"STREAM.MSG.GET."+messages.StreamParked)
	return append(l,
		"$KV."+messages.BucketApprovals+".>",
		messages.SubjectEventPrefix+"*.*.*."+messages.EventApprovalDecided,
		// the wake, into MISSIONS directly; in PARKED where MISSIONS
		// does not hold the woken subjects (a layout set up before it
		// did) or is full
		messages.WokenWildcard,
		messages.WakeWildcard,
		"$SRV.INFO",
	)
}

// toolServicePublish: a tool service writes its large results into its
// own results bucket (which the administrator's setup creates: creating a
// stream would let it choose the stream's subjects) and nothing else; its
// replies go out through allow_responses. Its JetStream acks come back on
// its own inboxes (PTC_NATS_INBOX_PREFIX).
func toolServicePublish(svc string) []string {
	s := toolResultStream(svc)
	l := append([]string{api + "INFO", api + "STREAM.INFO." + s}, directGet(s)...)
	return append(l, "$O."+messages.ToolResultBucket(svc)+".>")
}

// toolResultStream is the stream of a tool service's results bucket.
func toolResultStream(svc string) string { return "OBJ_" + messages.ToolResultBucket(svc) }

// workerPublish: pull and settle missions, store results, events, dead
// letters, journal entries and status, read contexts, discover tools and
// call the listed services' tools, read their large results and delete
// those of finished missions; verify (never create or change) the
// layout.
func workerPublish(services []string) []string {
	l := []string{api + "INFO"}
	l = append(l, streamInfo(append(bindStreams(), messages.StreamJournal, budgetLimitsStream, budgetSpendStream, quotaLimitsStream, quotaLeasesStream)...)...)
	l = append(l, workerConsumers("INFO")...)
	l = append(l, workerConsumers("MSG.NEXT")...)
	l = append(l, "$JS.ACK."+messages.StreamMissions+".>")
	// Dead-lettering a mission whose worker died reads and removes it,
	// and reads its dead letter (the failure a delivery that could not
	// store it named).
	l = append(l, api+"STREAM.MSG.GET."+messages.StreamMissions, api+"STREAM.MSG.DELETE."+messages.StreamMissions,
		api+"STREAM.MSG.GET."+messages.StreamDead)
	// A cancel of a queued mission reads it from the queue; a run numbers
	// its events after the last one stored, from the stream's leader when
	// no replica answers (it reads every event already).
	l = append(l, api+"DIRECT.GET."+messages.StreamMissions+".>", api+"DIRECT.GET."+messages.StreamEvents+".>",
		api+"STREAM.MSG.GET."+messages.StreamEvents)
	l = append(l, directGet(messages.StreamResults)...)
	l = append(l, directGet(kvStream)...)
	l = append(l, directGet(objStream)...)
	l = append(l, directBatch(approvalsStream)...)
	l = append(l, directGet(messages.StreamParked)...)
	// PARKED's wakes (a deadline's; a decision's or a quota's MISSIONS
	// did not take) are moved into MISSIONS by the workers (who also
	// publish a quota's and a decision's wakes there themselves, on the
	// same subjects): taken from their consumer, published on the woken
	// subjects below, acknowledged and removed. A message delete names
	// its sequence in its body, so a worker may remove any message of
	// PARKED, which it may overwrite (roll up) anyway.
	l = append(l, api+"CONSUMER.INFO."+messages.StreamParked+"."+fleet.WakeConsumerName,
		api+"CONSUMER.MSG.NEXT."+messages.StreamParked+"."+fleet.WakeConsumerName,
		"$JS.ACK."+messages.StreamParked+"."+fleet.WakeConsumerName+".>",
		api+"STREAM.MSG.DELETE."+messages.StreamParked)
	l = append(l, orderedRead(objStream)...)
	// A resumed or redelivered run reads its journal's first messages
	// one get each (a resumed one's, which its status names the last of,
	// with direct gets; a replica behind the leader sends it to the
	// leader), a long journal's rest with a consumer.
	l = append(l, api+"STREAM.MSG.GET."+messages.StreamJournal, api+"DIRECT.GET."+messages.StreamJournal)
	l = append(l, orderedRead(messages.StreamJournal)...)
	// A finished mission's journal is removed message by message, by
	// sequence, where its run knows them all (a rollup of the subject,
	// which a worker may publish anyway, scans the messages stored in
	// between).
	l = append(l, api+"STREAM.MSG.DELETE."+messages.StreamJournal)
	// Each model call reserves against the budgets of its mission with
	// compare-and-set on budget_spend (docs/fleet.md, "Budgets").
	l = append(l, directGet(budgetLimitsStream)...)
	l = append(l, directGet(budgetSpendStream)...)
	// A mission of a submitter with a running quota takes a lease by
	// compare-and-set on quota_leases before it runs (docs/fleet.md,
	// "Quotas").
	l = append(l, directGet(quotaLimitsStream)...)
	l = append(l, directGet(quotaLeasesStream)...)
	// A Step too large for one message is stored in mission_results
	// (and read back with direct gets).
	l = append(l, chunkRead(resObjStream)...)
	l = append(l,
		"$O."+messages.BucketResults+".>",
		messages.ResultSubject("*", "*"),
		// a mission's record, next to its result
		messages.RecordSubject("*", "*"),
		// a claim of a mission taken from another run, which fences
		// that run's result
		messages.ClaimSubject("*", "*", "*"),
		messages.SubjectEventPrefix+"*.*.*.*",
		messages.SubjectDeadPrefix+"*",
		messages.SubjectJournalPrefix+"*",
		// the worker that carried out a running mission's cancel tells
		// the one running it
		messages.StopWildcard,
		"$KV."+messages.BucketStatus+".>",
		// approvals: the record of a call reached, a deadline passed; a
		// suspended mission parked, scheduled, woken and removed; the
		// fleet's sweep for stalled decisions scheduled
		// (messages.SweepSubject; its ticks are taken as wakes)
		"$KV."+messages.BucketApprovals+".>",
		messages.SubjectParkPrefix+"*",
		messages.SubjectParkedPrefix+"*",
		messages.WakeWildcard,
		// PARKED's wakes, moved into MISSIONS
		messages.WokenWildcard,
		"$KV."+messages.BucketBudgetSpend+".>",
		"$KV."+messages.BucketQuotaLeases+".>",
		"$SRV.INFO",
	)
	for _, svc := range services {
		l = append(l, messages.ToolSubject(svc, "*"))
		// the service's large results, read by reference
		s := toolResultStream(svc)
		l = append(l, api+"STREAM.INFO."+s)
		l = append(l, chunkRead(s)...)
		l = append(l, orderedRead(s)...)
		// A finished mission's objects are deleted by purging their
		// subjects (fleet deletes them so, never through a delete marker):
		// the worker may remove the service's results but not write one.
		// NATS cannot bound a purge's filter, so a worker could purge the
		// whole bucket: it could fail the missions reading those results,
		// which a worker of the account can do to any of its missions
		// anyway; it still cannot forge a result.
		l = append(l, api+"STREAM.PURGE."+s)
	}
	return l
}

// AuthConf renders accounts as the auth.conf NATS includes.
func AuthConf(accounts []Account) string {
	var b strings.Builder
	b.WriteString("# Generated from deploy/k8s/natsauth; do not edit. Change natsauth and run\n")
	b.WriteString("#   go test ./deploy/k8s -run TestNATSAuthGenerated -update\n")
	b.WriteString("accounts {\n")
	for _, a := range accounts {
		fmt.Fprintf(&b, "  %s {\n    jetstream: enabled\n    users: [\n", a.Name)
		for _, u := range a.Users() {
			fmt.Fprintf(&b, "      {\n        user: %q\n        password: $%s\n", u.Name, u.PasswordVar)
			if u.Restricted {
				b.WriteString("        permissions: {\n")
				writePerm(&b, "publish", u.PubAllow, u.PubDeny)
				writePerm(&b, "subscribe", u.SubAllow, nil)
				if r := u.Responses; r != nil {
					fmt.Fprintf(&b, "          allow_responses: {max: %d, expires: %q}\n", r.Max, r.Expires.String())
				}
				b.WriteString("        }\n")
			}
			b.WriteString("      }\n")
		}
		b.WriteString("    ]\n  }\n")
	}
	b.WriteString("}\n")
	return b.String()
}

func writePerm(b *strings.Builder, dir string, allow, deny []string) {
	if allow == nil && deny == nil {
		return
	}
	fmt.Fprintf(b, "          %s: {\n", dir)
	for _, l := range []struct {
		kind string
		subs []string
	}{{"allow", allow}, {"deny", deny}} {
		if l.subs == nil {
			continue
		}
		fmt.Fprintf(b, "            %s: [\n", l.kind)
		for _, s := range l.subs {
			fmt.Fprintf(b, "              %q\n", s)
		}
		b.WriteString("            ]\n")
	}
	b.WriteString("          }\n")
}

// HelmAccounts renders accounts as the value of config.merge.accounts of
// the official NATS chart: the same users and permissions, passwords as
// "<< $VAR >>" so the chart writes the variable unquoted.
func HelmAccounts(accounts []Account) map[string]any {
	out := map[string]any{}
	for _, a := range accounts {
		var users []any
		for _, u := range a.Users() {
			m := map[string]any{"user": u.Name, "password": "<< $" + u.PasswordVar + " >>"}
			if u.Restricted {
				p := map[string]any{}
				if pub := perm(u.PubAllow, u.PubDeny); pub != nil {
					p["publish"] = pub
				}
				if sub := perm(u.SubAllow, nil); sub != nil {
					p["subscribe"] = sub
				}
				if r := u.Responses; r != nil {
					p["allow_responses"] = map[string]any{"max": r.Max, "expires": r.Expires.String()}
				}
				m["permissions"] = p
			}
			users = append(users, m)
		}
		out[a.Name] = map[string]any{"jetstream": "enabled", "users": users}
	}
	return out
}

func perm(allow, deny []string) map[string]any {
	if allow == nil && deny == nil {
		return nil
	}
	m := map[string]any{}
	if allow != nil {
		m["allow"] = allow
	}
	if deny != nil {
		m["deny"] = deny
	}
	return m
}

// PasswordVars lists every password variable of accounts, sorted.
func PasswordVars(accounts []Account) []string {
	var out []string
	for _, a := range accounts {
		for _, u := range a.Users() {
			out = append(out, u.PasswordVar)
		}
	}
	sort.Strings(out)
	return out
}

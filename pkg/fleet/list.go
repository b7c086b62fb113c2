package fleet

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/oklog/ulid/v2"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// ListOptions filter and bound Client.List.
type ListOptions struct {
	// States keeps only missions in these states (messages.StateQueued,
	// StateRunning, StateSucceeded, ...); empty keeps all.
	States []string
	// Labels keeps only missions carrying every one of these labels with
	// the value given; empty keeps all.
	Labels map[string]string
	// Limit is the number of missions returned, newest first. Default 50;
	// at most MaxList.
	Limit int
}

// hasLabels reports whether st's mission carries every label of want.
func hasLabels(st messages.Status, want map[string]string) bool {
	for k, v := range want {
		if st.Summary == nil {
			return false
		}
		if got, ok := st.Summary.Labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// MaxList bounds the missions one List returns.
const MaxList = 1000

// MissionInfo is one mission as List sees it: its status and times.
type MissionInfo struct {
	messages.Status
	// Submitted is when the mission id was made (its ULID time): the
	// submit time for ids made by Submit.
	Submitted time.Time
	// Duration is MissionDuration.
	Duration time.Duration
}

// List returns the most recent missions known to the status bucket,
// newest first (mission ids are ULIDs, so their order is submit order).
// It reads only the status bucket, which a dispatcher may read.
func (c *Client) List(ctx context.Context, opts ListOptions) ([]MissionInfo, error) {
	for _, s := range opts.States {
		if !validState(s) {
			return nil, fmt.Errorf("fleet: list: %w: state %q is not one of %v", messages.ErrInvalid, s, states)
		}
	}
	limit := opts.Limit
	if limit <= 0 {
		limit = 50
	}
	limit = min(limit, MaxList)
	// The bucket's keys come from the stream's per-subject counts (stream
	// info with a subject filter): no consumer, so a dispatcher needs only
	// the stream-info and get permissions it has anyway.
	stream, err := c.js.Stream(ctx, "KV_"+messages.BucketStatus)
	if err != nil {
		return nil, fmt.Errorf("fleet: list: %w", err)
	}
	prefix := "$KV." + messages.BucketStatus + "."
	info, err := stream.Info(ctx, jetstream.WithSubjectFilter(prefix+">"))
	if err != nil {
		return nil, fmt.Errorf("fleet: list: %w", err)
	}
	keys := make([]string, 0, len(info.State.Subjects))
	for subj := range info.State.Subjects {
		if k := strings.TrimPrefix(subj, prefix); messages.ValidMissionID(k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	slices.Reverse(keys)
	out := make([]MissionInfo, 0, min(limit, len(keys)))
	now := time.Now()
	for _, k := range keys {
		if len(out) == limit {
			break
		}
		e, err := getStatus(ctx, c.st.Status, k)
		if errors.Is(err, ErrNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("fleet: list: %w", err)
		}
		if len(opts.States) > 0 && !slices.Contains(opts.States, e.st.State) || !hasLabels(e.st, opts.Labels) {
			continue
		}
		mi := MissionInfo{Status: e.st}
		mi.Submitted, _ = MissionTime(k)
		mi.Duration = MissionDuration(e.st, now)
		out = append(out, mi)
	}
	return out, nil
}

// MissionDuration is a mission's duration as lists and traces show it:
// from its submission (the time in its id) to its last status change when
// it is finished, to now while it is queued or running. It includes the
// time queued, so it is at least the run's own duration (Usage.Duration).
func MissionDuration(st messages.Status, now time.Time) time.Duration {
	submitted, ok := MissionTime(st.MissionID)
	if !ok {
		return 0
	}
	end := now
	if messages.TerminalState(st.State) && !st.UpdatedAt.IsZero() {
		end = st.UpdatedAt
	}
	return max(end.Sub(submitted), 0)
}

// MissionTime returns the time encoded in a mission id (a ULID, made by
// Submit at submit time), in UTC; false when id is not a ULID.
func MissionTime(id string) (time.Time, bool) {
	u, err := ulid.ParseStrict(id)
	if err != nil {
		return time.Time{}, false
	}
	return ulid.Time(u.Time()).UTC(), true
}

// states are the mission states, in life order.
var states = messages.States()

func validState(s string) bool { return slices.Contains(states, s) }

// Events returns the progress events of mission id stored now (the EVENTS
// stream keeps them for an hour), oldest first, without waiting for more.
func (c *Client) Events(ctx context.Context, id string) ([]*messages.Event, error) {
	if err := checkID("events", id); err != nil {
		return nil, err
	}
	r := newEventReader(c.st.Events, id)
	var out []*messages.Event
	for {
		ev, err := r.next(ctx)
		if errors.Is(err, ErrNotFound) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("fleet: events %s: %w", id, err)
		}
		out = append(out, ev)
	}
	return out, nil
}

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

// List returns the most recent missions of the client's submitter (every
// submitter's with AllSubmitters): those with a status and those still
// queued, newest first (mission ids are ULIDs, so their order is submit
// order). Each status is the one Status reports: a mission whose result
// is stored is listed final, also before its final status is written.
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
	// The missions come from the per-subject counts of the status
	// bucket's stream and of the queue (stream info with a subject
	// filter, the client's submitter's subjects): no consumer, so a
	// dispatcher needs only the stream-info and get permissions it has
	// anyway. A mission in both is listed with its stored status.
	stored, err := c.subjectIDs(ctx, "KV_"+messages.BucketStatus, messages.StatusSubject(c.readSub, "*"), func(subj string) (string, bool) {
		_, id, ok := messages.ParseStatusKey(strings.TrimPrefix(subj, "$KV."+messages.BucketStatus+"."))
		return id, ok
	})
	if err != nil {
		return nil, err
	}
	queued := map[string]bool{}
	if len(opts.States) == 0 || slices.Contains(opts.States, messages.StateQueued) {
		ids, err := c.subjectIDs(ctx, messages.StreamMissions, messages.SubjectSubmitPrefix+c.readSub+".>", func(subj string) (string, bool) {
			_, _, id, ok := messages.ParseSubmitSubject(subj)
			return id, ok
		})
		if err != nil {
			return nil, err
		}
		for id := range ids {
			if !stored[id] {
				queued[id] = true
			}
		}
	}
	keys := make([]string, 0, len(stored)+len(queued))
	for id := range stored {
		keys = append(keys, id)
	}
	for id := range queued {
		keys = append(keys, id)
	}
	slices.Sort(keys)
	slices.Reverse(keys)
	out := make([]MissionInfo, 0, min(limit, len(keys)))
	now := time.Now()
	for _, k := range keys {
		if len(out) == limit {
			break
		}
		st, err := c.settled(ctx, k)
		if errors.Is(err, ErrNotFound) {
			continue // finished and expired, or deleted, meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("fleet: list: %w", err)
		}
		if len(opts.States) > 0 && !slices.Contains(opts.States, st.State) || !hasLabels(*st, opts.Labels) {
			continue
		}
		mi := MissionInfo{Status: *st}
		mi.Submitted, _ = MissionTime(k)
		mi.Duration = MissionDuration(*st, now)
		out = append(out, mi)
	}
	return out, nil
}

// subjectIDs returns the mission ids of the subjects of stream that match
// filter, as id reads them.
func (c *Client) subjectIDs(ctx context.Context, stream, filter string, id func(subject string) (string, bool)) (map[string]bool, error) {
	s, err := c.js.Stream(ctx, stream)
	if err != nil {
		return nil, fmt.Errorf("fleet: list: %w", err)
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(filter))
	if err != nil {
		return nil, fmt.Errorf("fleet: list: %w", err)
	}
	out := make(map[string]bool, len(info.State.Subjects))
	for subj := range info.State.Subjects {
		if k, ok := id(subj); ok {
			out[k] = true
		}
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
	r := newEventReader(c.st.nc, c.st.Events, c.key(id))
	var out []*messages.Event
	read := func() error {
		for {
			ev, err := r.next(ctx)
			if errors.Is(err, ErrNotFound) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("fleet: events %s: %w", id, err)
			}
			out = append(out, ev)
		}
	}
	if err := read(); err != nil {
		return nil, err
	}
	// A worker publishes a mission's last events, its final one among
	// them, just after its result (with those it held, EventDelay): a
	// read between the two waits for them, up to finalEventWait, once
	// the result is there.
	if len(out) > 0 && out[len(out)-1].Kind == messages.EventFinal || !c.resultStored(ctx, id) {
		return out, nil
	}
	for wait := time.Millisecond; wait < finalEventWait; wait *= 2 {
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return nil, fmt.Errorf("fleet: events %s: %w", id, ctx.Err())
		}
		if err := read(); err != nil {
			return nil, err
		}
		if len(out) > 0 && out[len(out)-1].Kind == messages.EventFinal {
			break
		}
	}
	return out, nil
}

// finalEventWait bounds how long Events waits for the final event of a
// mission whose result is stored: a worker that died between the two
// never publishes it.
const finalEventWait = time.Second

// resultStored reports whether mission id has a stored result (its
// message, not what it refers to).
func (c *Client) resultStored(ctx context.Context, id string) bool {
	_, err := getMsg(ctx, c.st.nc, c.st.Results, lastOn(messages.ResultSubject(c.key(id).sub, id)))
	return err == nil
}

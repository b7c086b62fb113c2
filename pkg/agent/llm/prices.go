package llm

import (
	"context"
	"errors"
	"io"
)

// Prices are what a model's tokens cost, in US dollars per million tokens,
// as its provider lists them. A zero CacheRead or CacheWrite price charges
// those tokens at the Input price (an upper bound when the provider
// discounts them).
type Prices struct {
	Input      float64
	Output     float64
	CacheRead  float64
	CacheWrite float64
}

// IsZero reports whether no price is set.
func (p Prices) IsZero() bool { return p == Prices{} }

// Cost estimates what u cost: the uncached prompt tokens at Input, the
// cached ones at CacheRead and CacheWrite, the output at Output.
func (p Prices) Cost(u Usage) float64 {
	read, write := p.CacheRead, p.CacheWrite
	if read == 0 {
		read = p.Input
	}
	if write == 0 {
		write = p.Input
	}
	uncached := max(u.InputTokens-u.CacheReadTokens-u.CacheWriteTokens, 0)
	return (float64(uncached)*p.Input + float64(u.CacheReadTokens)*read +
		float64(u.CacheWriteTokens)*write + float64(u.OutputTokens)*p.Output) / 1e6
}

// WithPrices returns m with the estimated cost of each answer in its
// Usage.CostUSD, from the answer's token counts and p. The result streams
// when m does.
func WithPrices(m Model, p Prices) Model {
	pm := pricedModel{m: m, p: p}
	if _, ok := m.(Streamer); ok {
		return pricedStreamer{pm}
	}
	return pm
}

type pricedModel struct {
	m Model
	p Prices
}

// Prices returns the prices the model was given.
func (pm pricedModel) Prices() Prices { return pm.p }

// Unwrap returns the model the prices were given to.
func (pm pricedModel) Unwrap() Model { return pm.m }

func (pm pricedModel) Complete(ctx context.Context, req Request) (*Response, error) {
	resp, err := pm.m.Complete(ctx, req)
	if resp != nil {
		resp.Usage.CostUSD = pm.p.Cost(resp.Usage)
	}
	return resp, err
}

// CompleteAsync is Complete without holding the caller while the answer
// is awaited (AsyncModel).
func (pm pricedModel) CompleteAsync(ctx context.Context, req Request, done func(*Response, error)) {
	CompleteAsync(ctx, pm.m, req, func(resp *Response, err error) {
		if resp != nil {
			resp.Usage.CostUSD = pm.p.Cost(resp.Usage)
		}
		done(resp, err)
	})
}

type pricedStreamer struct{ pricedModel }

func (ps pricedStreamer) Stream(ctx context.Context, req Request) (*Stream, error) {
	s, err := ps.m.(Streamer).Stream(ctx, req)
	if err != nil {
		return nil, err
	}
	return NewStream(&pricedSource{s: s, p: ps.p}), nil
}

// pricedSource passes a stream's events on, putting the cost of the usage
// known so far on every event that carries usage: the last one carries
// the cost of the whole answer.
type pricedSource struct {
	s   *Stream
	p   Prices
	acc Usage
}

func (ps *pricedSource) Next() (Event, error) {
	if !ps.s.Next() {
		if err := ps.s.Err(); err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		return nil, io.EOF
	}
	switch e := ps.s.Current().(type) {
	case MessageStart:
		mergeUsage(&ps.acc, e.Usage)
		e.Usage.CostUSD = ps.p.Cost(ps.acc)
		return e, nil
	case MessageDelta:
		mergeUsage(&ps.acc, e.Usage)
		e.Usage.CostUSD = ps.p.Cost(ps.acc)
		return e, nil
	default:
		return e, nil
	}
}

func (ps *pricedSource) Close() error { return ps.s.Close() }

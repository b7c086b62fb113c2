package agentrun

import (
	"context"
	"errors"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/fleet"
)

// fleetBudget is a fleet.MissionBudget as an llm.Budget.
type fleetBudget struct{ b *fleet.MissionBudget }

func (f fleetBudget) Reserve(ctx context.Context, model string, e llm.Estimate) (llm.Reservation, error) {
	r, err := f.b.Reserve(ctx, model, fleet.BudgetAmount{CostUSD: e.CostUSD, Tokens: e.Tokens()}, e.Priced)
	var be *fleet.BudgetError
	switch {
	case errors.As(err, &be):
		return nil, &llm.BudgetError{Budget: be.Budget, Msg: be.Msg}
	case err != nil:
		// the budget could not be read or written: the call may be
		// tried again
		return nil, llm.MarkRetryable(err, llm.ClassConnection)
	}
	return reservation{r}, nil
}

type reservation struct{ r *fleet.BudgetReservation }

func (r reservation) Settle(ctx context.Context, used llm.Usage) {
	r.r.Settle(ctx, fleet.BudgetAmount{CostUSD: used.CostUSD, Tokens: used.Total()})
}

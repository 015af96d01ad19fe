// Package quota turns a user's and a team's limits into the claims a request
// takes before it goes upstream, and says when a refused request may try again.
//
// Why the limits hold under concurrency: every claim is taken by one conditional
// statement in the database (see store.Reserve), which admits a request only
// while its counter has room left, counting what requests in flight hold. A
// request holds a bound of its tokens (its input's bytes, its images and the
// answer's limit), so the counter runs ahead of what is really spent; when the
// request ends, the hold is swapped for the vendor's figures. At most the last
// request admitted can take the counter past its limit, by at most its own hold.
// Requests a minute are counted at admission and are exact.
package quota

import (
	"fmt"
	"strings"
	"time"

	"github.com/ferryhq/ferry/gateway/store"
)

// Limits of a request: its user's and its team's (0: none). Budgets are in
// micros of the price table's currency.
type Limits struct {
	User, Team          string
	UserTokens, UserRPM int64
	TeamTokens, TeamRPM int64
	UserDay, UserMonth  int64
	TeamDay, TeamMonth  int64
}

// Of reads the limits that apply to a user.
func Of(u *store.User, team *store.Team) Limits {
	l := Limits{User: u.Name, Team: u.Team, UserTokens: u.DailyTokens, UserRPM: u.RPM, UserDay: u.DailyBudget, UserMonth: u.MonthlyBudget}
	if team != nil {
		l.TeamTokens, l.TeamRPM = team.DailyTokens, team.RPM
		l.TeamDay, l.TeamMonth = team.DailyBudget, team.MonthlyBudget
	}
	return l
}

// Tokens tells whether any token limit applies.
func (l Limits) Tokens() bool { return l.UserTokens > 0 || l.TeamTokens > 0 }

// Budgets tells whether any budget applies.
func (l Limits) Budgets() bool {
	return l.UserDay > 0 || l.UserMonth > 0 || (l.Team != "" && (l.TeamDay > 0 || l.TeamMonth > 0))
}

// Spend is a hold in money: Amount micros now, PerMTok more per million tokens
// of answer as a stream runs past its hold.
type Spend struct{ Amount, PerMTok int64 }

// BudgetClaims are what a request holds of its budgets at now.
func (l Limits) BudgetClaims(now time.Time, s Spend) []store.Claim {
	day, month := store.Day(now), store.Month(now)
	var cs []store.Claim
	add := func(limit int64, scope string, bucket int64) {
		if limit > 0 {
			cs = append(cs, store.Claim{Scope: scope, Bucket: bucket, Amount: s.Amount, Limit: limit, PerMTok: s.PerMTok})
		}
	}
	add(l.UserDay, store.UserScope(l.User, store.Cost), day)
	add(l.UserMonth, store.UserScope(l.User, store.CostMonth), month)
	if l.Team != "" {
		add(l.TeamDay, store.TeamScope(l.Team, store.Cost), day)
		add(l.TeamMonth, store.TeamScope(l.Team, store.CostMonth), month)
	}
	return cs
}

// Cost is what tokens cost at price p, in micros: input includes cached, output
// includes reasoning, as the vendors count them.
func Cost(p *store.Price, input, cached, output, reasoning int64) int64 {
	if p == nil {
		return 0
	}
	rp := p.Reasoning
	if rp == 0 {
		rp = p.Output
	}
	cp := p.Cached
	if cp == 0 {
		cp = p.Input
	}
	reasoning = min(reasoning, output)
	nano := (input-cached)*p.Input + cached*cp + (output-reasoning)*p.Output + reasoning*rp
	return (nano + 500_000) / 1_000_000
}

// Money writes micros in the currency's units.
func Money(micros int64) string { return fmt.Sprintf("%.2f", float64(micros)/1e6) }

// Claims are what a request takes at now, holding hold tokens.
func (l Limits) Claims(now time.Time, hold int64) []store.Claim {
	day, minute := store.Day(now), store.Minute(now)
	var cs []store.Claim
	if l.UserRPM > 0 {
		cs = append(cs, store.Claim{Scope: store.UserScope(l.User, store.Requests), Bucket: minute, Amount: 1, Limit: l.UserRPM, Count: true})
	}
	if l.TeamRPM > 0 && l.Team != "" {
		cs = append(cs, store.Claim{Scope: store.TeamScope(l.Team, store.Requests), Bucket: minute, Amount: 1, Limit: l.TeamRPM, Count: true})
	}
	if l.UserTokens > 0 {
		cs = append(cs, store.Claim{Scope: store.UserScope(l.User, store.Tokens), Bucket: day, Amount: hold, Limit: l.UserTokens})
	}
	if l.TeamTokens > 0 && l.Team != "" {
		cs = append(cs, store.Claim{Scope: store.TeamScope(l.Team, store.Tokens), Bucket: day, Amount: hold, Limit: l.TeamTokens})
	}
	return cs
}

// Refusal is why a request was refused, for the client.
type Refusal struct {
	Msg string
	// Rate: the requests-a-minute limit, rather than the day's tokens.
	Rate bool
	// RetryAfter is the wait until the counter has room again: its window's turn,
	// or a few seconds when requests in flight hold the room.
	RetryAfter time.Duration
	// UsedUp: the day's tokens are spent; nothing frees before midnight UTC, so
	// a client should not retry on its own.
	UsedUp bool
}

// Explain says why a claim was refused at now.
func Explain(r *store.Refused, now time.Time) Refusal {
	c := r.Claim
	who := "your"
	if len(c.Scope) > 5 && c.Scope[:5] == "team:" {
		who = "your team's"
	}
	if strings.HasSuffix(c.Scope, ":"+store.Cost) || strings.HasSuffix(c.Scope, ":"+store.CostMonth) {
		what, next := "daily", store.DayStart(store.Day(now)+1)
		if strings.HasSuffix(c.Scope, ":"+store.CostMonth) {
			what, next = "monthly", store.MonthStart(store.Month(now)+1)
		}
		if r.Used < c.Limit {
			return Refusal{Msg: fmt.Sprintf("%s %s budget of %s is held by requests in flight (%s spent, %s held); try again in a few seconds",
				who, what, Money(c.Limit), Money(r.Used), Money(r.Reserved)), RetryAfter: 2 * time.Second}
		}
		return Refusal{Msg: fmt.Sprintf("%s %s budget of %s is spent (%s); it renews at %s UTC", who, what, Money(c.Limit), Money(r.Used),
			next.Format("2006-01-02 15:04")), RetryAfter: next.Sub(now), UsedUp: true}
	}
	if c.Count {
		next := time.Unix((store.Minute(now)+1)*60, 0)
		return Refusal{Msg: fmt.Sprintf("%s limit of %d requests a minute is reached; try again in %d s", who, c.Limit, int(next.Sub(now).Seconds())+1),
			Rate: true, RetryAfter: next.Sub(now)}
	}
	if r.Used < c.Limit {
		// The room left is held by requests in flight; it frees as they end.
		return Refusal{Msg: fmt.Sprintf("%s daily quota of %d tokens is held by requests in flight (%d used, %d held); try again in a few seconds",
			who, c.Limit, r.Used, r.Reserved), RetryAfter: 2 * time.Second}
	}
	next := store.DayStart(store.Day(now) + 1)
	return Refusal{Msg: fmt.Sprintf("%s daily quota of %d tokens is used up (%d used); it renews at %s UTC",
		who, c.Limit, r.Used, next.Format("2006-01-02 15:04")), RetryAfter: next.Sub(now), UsedUp: true}
}

// HeldByStopped explains a refusal whose room is held by requests of a gateway
// process that stopped without settling them, released at freed.
func HeldByStopped(r *store.Refused, now, freed time.Time) Refusal {
	who := "your"
	if strings.HasPrefix(r.Claim.Scope, "team:") {
		who = "your team's"
	}
	wait := max(freed.Sub(now), time.Second)
	return Refusal{Msg: fmt.Sprintf("%s daily quota of %d tokens is held by requests of a gateway process that stopped (%d used, %d held); it is released in %d s",
		who, r.Claim.Limit, r.Used, r.Reserved, int(wait.Seconds()+0.999)), RetryAfter: wait}
}

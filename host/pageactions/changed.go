package pageactions

import (
	"bytes"
	"encoding/json"
	"sort"
)

// MaxListed bounds each list of the changed evidence; what is left out is counted.
const MaxListed = 20

// Changed is the evidence of what differs between the snapshots before and after a
// run, in the list dialect's shape. It answers a narrower question than expect: which exposed
// records and actions differ, not whether the business result is right.
type Changed struct {
	Observed bool          `json:"observed"`
	Records  RecordChanges `json:"records"`
	Actions  ActionChanges `json:"actions"`
	// Timing says where the call's time went (milliseconds), when the page stamped it.
	Timing *Timing `json:"timing,omitempty"`
}

// Timing is measured with the host's and the page's clocks (both wall clocks of
// one machine): from the host sending page.action.run to the handler starting, the
// handler's own run, and from the handler's end to the host holding the answer
// (the expectation's wait and the after-snapshot included).
type Timing struct {
	CallToHandlerMS   float64 `json:"call_to_handler_ms"`
	HandlerMS         float64 `json:"handler_ms"`
	HandlerToResultMS float64 `json:"handler_to_result_ms"`
}

// RecordChanges lists the records added, removed and updated (by id) across every
// collection, whether any collection's order changed, and the totals.
type RecordChanges struct {
	Added     []string `json:"added"`
	Removed   []string `json:"removed"`
	Updated   []string `json:"updated"`
	Reordered bool     `json:"reordered"`
	Omitted   Counts   `json:"omitted"`
	Total     FromTo   `json:"total"`
}

// ActionChanges lists the action identities (id, or id@record for a per-record
// action) that became available and those that stopped being.
type ActionChanges struct {
	Added   []string `json:"added"`
	Removed []string `json:"removed"`
	Omitted Counts   `json:"omitted"`
}

// Counts is how many entries a bounded list left out.
type Counts struct {
	Added   int `json:"added"`
	Removed int `json:"removed"`
	Updated int `json:"updated,omitempty"`
}

// FromTo is a total before and after.
type FromTo struct {
	From int `json:"from"`
	To   int `json:"to"`
}

// Diff compares two snapshots of one frame. A nil snapshot means the page could not
// take it: the evidence then says it was not observed.
func Diff(before, after *Snapshot) Changed {
	c := Changed{
		Records: RecordChanges{Added: []string{}, Removed: []string{}, Updated: []string{}},
		Actions: ActionChanges{Added: []string{}, Removed: []string{}},
	}
	if before == nil || after == nil {
		return c
	}
	c.Observed = true
	names := map[string]bool{}
	for n := range before.Records {
		names[n] = true
	}
	for n := range after.Records {
		names[n] = true
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	var added, removed, updated []string
	for _, n := range sorted {
		b, a := before.Records[n], after.Records[n]
		c.Records.Total.From += b.Total
		c.Records.Total.To += a.Total
		old := map[string]Row{}
		for _, r := range b.Rows {
			old[r.ID] = r
		}
		now := map[string]bool{}
		var keptNew []string
		for _, r := range a.Rows {
			now[r.ID] = true
			o, ok := old[r.ID]
			switch {
			case !ok:
				added = append(added, r.ID)
			case !bytes.Equal(compact(o.Fields), compact(r.Fields)):
				updated = append(updated, r.ID)
			}
			if ok {
				keptNew = append(keptNew, r.ID)
			}
		}
		var keptOld []string
		for _, r := range b.Rows {
			if !now[r.ID] {
				removed = append(removed, r.ID)
			} else {
				keptOld = append(keptOld, r.ID)
			}
		}
		for i := range keptOld {
			if keptOld[i] != keptNew[i] {
				c.Records.Reordered = true
				break
			}
		}
	}
	c.Records.Added, c.Records.Omitted.Added = bound(added)
	c.Records.Removed, c.Records.Omitted.Removed = bound(removed)
	c.Records.Updated, c.Records.Omitted.Updated = bound(updated)

	was, is := identities(before), identities(after)
	var aAdded, aRemoved []string
	for _, id := range sortedKeys(is) {
		if !was[id] {
			aAdded = append(aAdded, id)
		}
	}
	for _, id := range sortedKeys(was) {
		if !is[id] {
			aRemoved = append(aRemoved, id)
		}
	}
	c.Actions.Added, c.Actions.Omitted.Added = bound(aAdded)
	c.Actions.Removed, c.Actions.Omitted.Removed = bound(aRemoved)
	return c
}

// identities are the available actions of a snapshot: id, and id@record for each
// record a per-record action is available for.
func identities(s *Snapshot) map[string]bool {
	out := map[string]bool{}
	for _, a := range s.Actions {
		if len(a.Instances) > 0 {
			for _, in := range a.Instances {
				if in.Available {
					out[a.ID+"@"+in.Record] = true
				}
			}
			continue
		}
		if a.Available {
			out[a.ID] = true
		}
	}
	return out
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func bound(list []string) ([]string, int) {
	if list == nil {
		return []string{}, 0
	}
	if len(list) > MaxListed {
		return list[:MaxListed], len(list) - MaxListed
	}
	return list, 0
}

func compact(raw []byte) []byte {
	var b bytes.Buffer
	if len(raw) == 0 || json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

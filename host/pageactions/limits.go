package pageactions

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// Bounds on what one page may declare. A page is another party: what it says is
// data of bounded size, so that no page can fill the model's context or the host's
// memory. What a bound cuts is counted, told to the page (UpdateResult.Cut and the
// refusals) and said in the page context.
const (
	// MaxActions is how many actions one frame may declare; the rest are refused.
	MaxActions = 64
	// MaxDescription bounds an action's description, in characters (cut beyond).
	MaxDescription = 1000
	// MaxReason bounds an unavailable reason or a failure's reason, in characters.
	MaxReason = 300
	// MaxTitle bounds the page title and an action's title, in characters.
	MaxTitle = 200
	// MaxSchemaBytes bounds one action's parameters, as JSON; a larger one is refused.
	MaxSchemaBytes = 16 << 10
	// MaxRecords bounds the rows of one collection kept from a snapshot (the page API
	// sends at most 200; the total stays counted).
	MaxRecords = 200
	// MaxCollections bounds the record collections of one snapshot.
	MaxCollections = 20
	// MaxFieldsBytes bounds one record's fields, as JSON; larger ones are replaced
	// by a note saying so.
	MaxFieldsBytes = 1 << 10
	// PageContextTokens is the budget of the page context of one model request:
	// actions, reasons and records of the bound tab together (tokens estimated as
	// bytes/4, as tools.EstimateTokens does).
	PageContextTokens = 2000
)

// Cut counts what the bounds left out of one frame's latest update.
type Cut struct {
	Actions      int `json:"actions,omitempty"`      // actions over MaxActions
	Descriptions int `json:"descriptions,omitempty"` // descriptions cut to MaxDescription
	Reasons      int `json:"reasons,omitempty"`      // reasons cut to MaxReason
	Records      int `json:"records,omitempty"`      // rows over MaxRecords
	Collections  int `json:"collections,omitempty"`  // collections over MaxCollections
	Fields       int `json:"fields,omitempty"`       // records whose fields were over MaxFieldsBytes
}

func (c *Cut) add(o Cut) {
	c.Actions += o.Actions
	c.Descriptions += o.Descriptions
	c.Reasons += o.Reasons
	c.Records += o.Records
	c.Collections += o.Collections
	c.Fields += o.Fields
}

func (c Cut) empty() bool { return c == Cut{} }

// String says what was cut, for the page context.
func (c Cut) String() string {
	var parts []string
	add := func(n int, what string) {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, what))
		}
	}
	add(c.Actions, fmt.Sprintf("actions over the limit of %d", MaxActions))
	add(c.Descriptions, fmt.Sprintf("descriptions cut to %d characters", MaxDescription))
	add(c.Reasons, fmt.Sprintf("reasons cut to %d characters", MaxReason))
	add(c.Records, fmt.Sprintf("records over %d a collection", MaxRecords))
	add(c.Collections, fmt.Sprintf("collections over %d", MaxCollections))
	add(c.Fields, fmt.Sprintf("records with fields over %d bytes", MaxFieldsBytes))
	if len(parts) == 0 {
		return ""
	}
	return "(the page declared more than Ferry passes on: " + strings.Join(parts, ", ") + ")"
}

// boundText cuts s to n characters, marking the cut.
func boundText(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// boundDecls applies the declaration bounds: at most MaxActions (in declaration order),
// descriptions and titles cut, schemas over MaxSchemaBytes refused, duplicates and
// empty ids refused.
func boundDecls(ds []Decl) (map[string]Decl, []string, Cut, []Refusal) {
	decls := map[string]Decl{}
	var order []string
	var cut Cut
	var refused []Refusal
	for _, d := range ds {
		switch {
		case d.ID == "":
			refused = append(refused, Refusal{ID: d.ID, Reason: "an action needs an id"})
			continue
		case len(d.Parameters) > MaxSchemaBytes:
			refused = append(refused, Refusal{ID: d.ID, Reason: fmt.Sprintf("its parameters are %d bytes of JSON; at most %d are accepted", len(d.Parameters), MaxSchemaBytes)})
			continue
		}
		if _, dup := decls[d.ID]; !dup {
			if len(order) == MaxActions {
				cut.Actions++
				refused = append(refused, Refusal{ID: d.ID, Reason: fmt.Sprintf("a page may declare at most %d actions", MaxActions)})
				continue
			}
			order = append(order, d.ID)
		}
		if utf8.RuneCountInString(d.Description) > MaxDescription {
			d.Description = boundText(d.Description, MaxDescription)
			cut.Descriptions++
		}
		d.Title = boundText(d.Title, MaxTitle)
		d.ExpectDesc = boundText(d.ExpectDesc, MaxReason)
		decls[d.ID] = d
	}
	return decls, order, cut, refused
}

// boundSnapshot applies the snapshot bounds: reasons cut, rows and collections
// bounded, oversized fields replaced by a note.
func boundSnapshot(s Snapshot) (Snapshot, Cut) {
	var cut Cut
	reason := func(r string) string {
		if utf8.RuneCountInString(r) > MaxReason {
			cut.Reasons++
			return boundText(r, MaxReason)
		}
		return r
	}
	out := Snapshot{Region: boundText(s.Region, MaxTitle), Actions: make([]ActionState, 0, len(s.Actions))}
	for i, a := range s.Actions {
		if i == 2*MaxActions {
			break
		}
		a.Reason = reason(a.Reason)
		if len(a.Instances) > MaxRecords {
			a.Instances = a.Instances[:MaxRecords]
		}
		for j := range a.Instances {
			a.Instances[j].Reason = reason(a.Instances[j].Reason)
		}
		out.Actions = append(out.Actions, a)
	}
	if len(s.Records) > 0 {
		out.Records = map[string]Collection{}
		for _, n := range sortedNames(s.Records) {
			if len(out.Records) == MaxCollections {
				cut.Collections++
				continue
			}
			c := s.Records[n]
			if len(c.Rows) > MaxRecords {
				cut.Records += len(c.Rows) - MaxRecords
				c.Rows = c.Rows[:MaxRecords]
			}
			rows := make([]Row, len(c.Rows))
			for i, r := range c.Rows {
				if len(r.Fields) > MaxFieldsBytes {
					cut.Fields++
					note, _ := json.Marshal(map[string]string{"note": fmt.Sprintf("fields of %d bytes left out (at most %d)", len(r.Fields), MaxFieldsBytes)})
					r.Fields = note
				}
				r.ID = boundText(r.ID, MaxTitle)
				rows[i] = r
			}
			c.Rows = rows
			if c.Total < len(c.Rows) {
				c.Total = len(c.Rows)
			}
			out.Records[boundText(n, MaxTitle)] = c
		}
	}
	return out, cut
}

func sortedNames(m map[string]Collection) []string {
	out := make([]string, 0, len(m))
	for n := range m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// budget spends the page context's token budget line by line and remembers what it
// had to leave out.
type budget struct {
	left    int // bytes
	actions int
	records int
	other   []string
}

func newBudget(tokens int) *budget { return &budget{left: tokens * 4} }

func (b *budget) fits(n int) bool { return n <= b.left }

// take spends the budget on line, or counts it as left out.
func (b *budget) take(line, what string) bool {
	if len(line) > b.left {
		if strings.Contains(what, "action") {
			b.actions++
		} else {
			b.records++
		}
		return false
	}
	b.left -= len(line)
	return true
}

func (b *budget) cutRecords(n int) { b.records += n }

func (b *budget) note(s string) {
	if s != "" {
		b.other = append(b.other, s)
	}
}

// notes are the lines that say what the budget and the bounds left out.
func (b *budget) notes() []string {
	out := append([]string{}, b.other...)
	if b.actions > 0 || b.records > 0 {
		out = append(out, fmt.Sprintf("(the page context budget of %d tokens left out %d actions and %d records: call the page's actions or get_tab_content to see more)",
			PageContextTokens, b.actions, b.records))
	}
	return out
}

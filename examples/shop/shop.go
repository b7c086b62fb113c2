// Package shop is the example tool service of this repository: a small shop
// (customers, orders, support emails) generated deterministically, served as
// fleet tools. The dispatcher's local mode, the example missions under
// examples/missions and the end-to-end tests use it; cmd/shoptools runs it as
// a standalone service.
//
// The dataset is large enough that dumping it into a model's context would be
// wasteful (thousands of records), which is the point of programmatic tool
// calling: the model writes a program that filters and aggregates it.
package shop

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/ptcfleet/ptc/pkg/fleet"
)

// Customer is one customer. Phone is firewalled (the "_" prefix): programs
// can use it, models never see it.
type Customer struct {
	ID     int    `json:"id"`
	Name   string `json:"name"`
	Email  string `json:"email"`
	Region string `json:"region"`
	Tier   string `json:"tier"`
	Phone  string `json:"_phone"`
}

// Order is one order.
type Order struct {
	ID         int     `json:"id"`
	CustomerID int     `json:"customer_id"`
	Total      float64 `json:"total"`
	Status     string  `json:"status"`
	Items      int     `json:"items"`
	CreatedAt  string  `json:"created_at"`
}

// Email is one support email. Body is firewalled.
type Email struct {
	ID         int    `json:"id"`
	From       string `json:"from"`
	Subject    string `json:"subject"`
	Urgent     bool   `json:"urgent"`
	ReceivedAt string `json:"received_at"`
	Body       string `json:"_body"`
}

// Data is a generated dataset. It is read-only after Generate and safe for
// concurrent use.
type Data struct {
	Customers []Customer
	Orders    []Order
	Emails    []Email
}

var (
	regions  = []string{"north", "south", "east", "west"}
	tiers    = []string{"free", "pro", "enterprise"}
	statuses = []string{"paid", "paid", "paid", "shipped", "refunded", "pending"}
	first    = []string{"Ada", "Grace", "Alan", "Edsger", "Barbara", "Donald", "Margaret", "Ken", "Radia", "Leslie", "Frances", "John"}
	last     = []string{"Lovelace", "Hopper", "Turing", "Dijkstra", "Liskov", "Knuth", "Hamilton", "Thompson", "Perlman", "Lamport", "Allen", "Backus"}
	topics   = []string{"invoice", "refund", "login", "shipping", "upgrade", "outage", "billing", "password"}
)

// Generate builds a dataset of the given size from a fixed seed: the same
// arguments always give the same data.
func Generate(customers, orders, emails int) *Data {
	r := rand.New(rand.NewPCG(7, 11))
	d := &Data{}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 1; i <= customers; i++ {
		f, l := first[r.IntN(len(first))], last[r.IntN(len(last))]
		d.Customers = append(d.Customers, Customer{
			ID: i, Name: f + " " + l,
			Email:  fmt.Sprintf("%s.%s%d@example.com", strings.ToLower(f), strings.ToLower(l), i),
			Region: regions[r.IntN(len(regions))], Tier: tiers[r.IntN(len(tiers))],
			Phone: fmt.Sprintf("+1-555-%04d", r.IntN(10000)),
		})
	}
	for i := 1; i <= orders; i++ {
		d.Orders = append(d.Orders, Order{
			ID: i, CustomerID: 1 + r.IntN(max(customers, 1)),
			Total:     float64(r.IntN(50000)) / 100,
			Status:    statuses[r.IntN(len(statuses))],
			Items:     1 + r.IntN(9),
			CreatedAt: base.Add(time.Duration(r.IntN(300*24)) * time.Hour).Format(time.DateOnly),
		})
	}
	for i := 1; i <= emails; i++ {
		c := d.Customers[r.IntN(len(d.Customers))]
		t := topics[r.IntN(len(topics))]
		d.Emails = append(d.Emails, Email{
			ID: i, From: c.Email, Subject: fmt.Sprintf("Question about %s #%d", t, i),
			Urgent:     r.IntN(10) == 0,
			ReceivedAt: base.Add(time.Duration(r.IntN(300*24*60)) * time.Minute).Format(time.RFC3339),
			Body:       fmt.Sprintf("Hello, this is %s. I have a problem with my %s. Account phone %s.", c.Name, t, c.Phone),
		})
	}
	return d
}

// Default is the dataset the examples use: 2,000 customers, 10,000 orders
// and 5,000 emails.
func Default() *Data { return Generate(2000, 10000, 5000) }

// ListCustomersArgs are the arguments of list_customers.
type ListCustomersArgs struct {
	Region string `json:"region,omitempty"`
	Tier   string `json:"tier,omitempty"`
}

// ListOrdersArgs are the arguments of list_orders.
type ListOrdersArgs struct {
	CustomerID int    `json:"customer_id,omitempty"`
	Status     string `json:"status,omitempty"`
}

// SearchEmailsArgs are the arguments of search_emails.
type SearchEmailsArgs struct {
	Query  string `json:"query,omitempty"`
	Urgent *bool  `json:"urgent,omitempty"`
	Limit  int    `json:"limit,omitempty"`
}

// GetCustomerArgs are the arguments of get_customer.
type GetCustomerArgs struct {
	ID int `json:"id"`
}

// ListCustomers returns the customers matching the filters.
func (d *Data) ListCustomers(_ context.Context, a ListCustomersArgs) ([]Customer, error) {
	out := []Customer{}
	for _, c := range d.Customers {
		if (a.Region == "" || c.Region == a.Region) && (a.Tier == "" || c.Tier == a.Tier) {
			out = append(out, c)
		}
	}
	return out, nil
}

// ListOrders returns the orders matching the filters.
func (d *Data) ListOrders(_ context.Context, a ListOrdersArgs) ([]Order, error) {
	out := []Order{}
	for _, o := range d.Orders {
		if (a.CustomerID == 0 || o.CustomerID == a.CustomerID) && (a.Status == "" || o.Status == a.Status) {
			out = append(out, o)
		}
	}
	return out, nil
}

// SearchEmails returns emails whose subject contains the query (case
// insensitive), optionally only urgent ones, at most Limit (default 100).
func (d *Data) SearchEmails(_ context.Context, a SearchEmailsArgs) ([]Email, error) {
	limit := a.Limit
	if limit <= 0 {
		limit = 100
	}
	q := strings.ToLower(a.Query)
	out := []Email{}
	for _, e := range d.Emails {
		if len(out) == limit {
			break
		}
		if (q == "" || strings.Contains(strings.ToLower(e.Subject), q)) && (a.Urgent == nil || e.Urgent == *a.Urgent) {
			out = append(out, e)
		}
	}
	return out, nil
}

// GetCustomer returns one customer or an error naming the missing id.
func (d *Data) GetCustomer(_ context.Context, a GetCustomerArgs) (Customer, error) {
	i, ok := slices.BinarySearchFunc(d.Customers, a.ID, func(c Customer, id int) int { return c.ID - id })
	if !ok {
		return Customer{}, fmt.Errorf("customer %d not found", a.ID)
	}
	return d.Customers[i], nil
}

// ServiceName is the micro service name the shop tools are served under.
const ServiceName = "shop"

// Register serves the dataset's tools on svc: list_customers, list_orders,
// search_emails and get_customer. Signatures are derived from the Go types.
func (d *Data) Register(svc *fleet.ToolService) error {
	regs := []error{
		fleet.RegisterTyped(svc, "list_customers", fleet.ToolSpec{Description: "List customers, optionally filtered by region (north|south|east|west) and tier (free|pro|enterprise)."}, d.ListCustomers),
		fleet.RegisterTyped(svc, "list_orders", fleet.ToolSpec{Description: "List orders, optionally filtered by customer_id and status (paid|shipped|refunded|pending). Totals are in dollars."}, d.ListOrders),
		fleet.RegisterTyped(svc, "search_emails", fleet.ToolSpec{Description: "Search support emails by subject text; urgent filters on urgency; limit defaults to 100."}, d.SearchEmails),
		fleet.RegisterTyped(svc, "get_customer", fleet.ToolSpec{Description: "Get one customer by id."}, d.GetCustomer),
	}
	for _, err := range regs {
		if err != nil {
			return fmt.Errorf("shop: register tools: %w", err)
		}
	}
	return nil
}

// ToolNames lists the tools Register serves.
func ToolNames() []string {
	return []string{"list_customers", "list_orders", "search_emails", "get_customer"}
}

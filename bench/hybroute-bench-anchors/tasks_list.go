package main

import "fmt"

// suite is the task suite, one task per kind of site.
func suite() []task {
	rows := tableRows()
	target := rows[86] // ACC-0087, on page 4
	item := catalogueItems300()[217]
	return []task{
		{
			name: "form with validation", question: "Sign up as Ada Lovelace; what does the form say to a wrong email, and what is the member number?",
			answers: []string{"Email must look like name@example.com.", "M-4821"},
			steps: []step{
				navigate("/form"), snapshot(),
				fill("textbox", "Full name", "Ada Lovelace", false),
				fill("textbox", "Email", "ada.example.com", false),
				click("button", "Sign up"), look("Email must look like"),
				fill("textbox", "Email", "ada@example.com", false),
				click("button", "Sign up"), look("member number"),
			},
		},
		{
			name: "long table, paginated", question: "What is the balance of account " + target.ID + "?",
			answers: []string{target.Balance},
			steps: []step{
				navigate("/table"), snapshot(),
				until(target.ID, tablePages-1, func(i int) []step {
					// The account asked about, as a model looks for it on
					// each page (a server that folds rows finds it).
					return []step{click("button", "Next page"), look(target.ID)}
				}),
			},
		},
		{
			name: "long article", question: "In what year was the bridge completed?",
			answers: []string{"completed in 1893"},
			steps:   []step{navigate("/article"), snapshot(), look("completed in")},
		},
		{
			name: "single-page app", question: "What is the status of order #5521?",
			answers: []string{"awaiting pickup at depot 7"},
			steps:   []step{navigate("/spa"), snapshot(), waitFor("#5521"), look("Order #5521")},
		},
		{
			name: "nested cross-origin iframes", question: "What is the parcel's tracking code?",
			answers: []string{"TRK-88412"},
			steps:   []step{navigate("/frames"), snapshot(), look("Tracking code")},
		},
		{
			// The same page: its other frame is another site's.
			name: "cross-site iframe", question: "What does the partner's frame offer?",
			answers: []string{"Save 10% on your next parcel."},
			steps:   []step{navigate("/frames"), snapshot(), look("Save 10%")},
		},
		{
			name: "shadow DOM", question: "When does Grace Hopper's plan renew?",
			answers: []string{"2027-03-14"},
			steps:   []step{navigate("/shadow"), snapshot(), click("button", "Show plan details"), look("renews on")},
		},
		{
			name: "infinite scroll", question: "What is the answer to the weekly riddle in post 57?",
			answers: []string{"ZEBRA-57"},
			steps: []step{
				navigate("/feed"), snapshot(),
				until("ZEBRA-57", 4, func(i int) []step {
					// The feed loads after the key's answer: the agent waits
					// for the next post, then reads it.
					n := (i+1)*20 + 1
					return []step{press("End"), waitFor(fmt.Sprintf("Post %d", n)), look(fmt.Sprintf("Post number %d ", n))}
				}),
			},
		},
		{
			name: "catalogue, 1,500 nodes", question: "Add Item 217 to the cart; what does the cart say?",
			answers: []string{fmt.Sprintf("Cart: Item 217 at %s", item.Price)},
			steps:   []step{navigate("/catalogue"), snapshot(), click("button", "Add 217"), look("Cart: Item 217")},
		},
		{
			name: "docs site with search", question: "How many requests per minute does the API allow?",
			answers: []string{"600 requests per minute per token"},
			steps: []step{
				navigate("/docs"), snapshot(),
				fill("searchbox", "Search the docs", "rate limit", true), look("results for"),
				click("link", "Rate limits"), look("requests per minute"),
			},
		},
		{
			name: "login, then dashboard", question: "Log in as ada; what is this month's revenue?",
			answers: []string{"Revenue this month: $48,210"},
			steps: []step{
				navigate("/login"), snapshot(),
				fill("textbox", "Username", "ada", false),
				fill("textbox", "Password", "lovelace", false),
				click("button", "Log in"), look("Revenue this month"),
			},
		},
		{
			name: "multi-step checkout", question: "Order with express delivery to Portugal; what are the order number and total?",
			answers: []string{"Order number CK-20931, total €86.50, to Portugal."},
			steps: []step{
				navigate("/checkout"), snapshot(),
				fill("textbox", "Full name", "Ada Lovelace", false),
				fill("textbox", "Street address", "12 Analytical Row", false),
				choose("combobox", "Country", "Portugal"),
				click("button", "Continue to delivery"), look("Step 2 of 3"),
				click("radio", "Express (next day, €12.00)"),
				click("button", "Continue to payment"), look("Step 3 of 3"),
				fill("textbox", "Card number", "4242424242424242", false),
				click("button", "Place order"), look("Order number"),
			},
		},
		{
			name: "images and icons", question: "Who took the photo of the lighthouse at dusk?",
			answers: []string{"Mirela Costa"},
			steps:   []step{navigate("/gallery"), snapshot(), look("lighthouse at dusk")},
		},
	}
}

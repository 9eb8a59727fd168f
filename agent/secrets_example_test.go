package agent_test

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/hybroute/hybroute"
	"github.com/hybroute/hybroute/agent"
)

// Secrets the model types by name and never reads: each is bound to the
// origins where it may be typed. The Router's log is scrubbed of them with
// the toolset's own spellings; the toolset scrubs its results and its log.
func ExampleWithSecrets() {
	secrets, err := agent.NewSecrets(agent.Secret{
		Name:    "crm-password",
		Value:   os.Getenv("CRM_PASSWORD"),
		Origins: []string{"http://10.0.0.5:8080"}, // private: typed in the local browser only
	})
	if err != nil {
		fmt.Println(err) // no value of the environment: too short to be a secret
		return
	}
	log := slog.New(secrets.LogHandler(slog.NewTextHandler(os.Stderr, nil)))
	router, err := hybroute.New(nil, hybroute.WithLogger(log))
	if err != nil {
		return
	}
	defer router.Close()
	ts := agent.New(router, agent.WithSecrets(secrets))
	defer ts.Close()
	// The model calls browser_type_secret {"ref": "e7", "name": "crm-password", "submit": true}.
}

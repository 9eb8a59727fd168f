package netpolicy_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/hybroute/hybroute/netpolicy"
	"github.com/hybroute/hybroute/route"
)

// Classify URL literals as Chromium reads them, then ask the rule of a
// hybrid router (private addresses on the local browser only, credentials
// in URLs kept off remote browsers) where each may be opened.
func Example() {
	ctx := context.Background()
	cls := netpolicy.NewClassifier(nil) // names go to net.DefaultResolver; these URLs name none
	pol := netpolicy.Policy{PrivateOnLocal: true}

	opened := func(err error) string {
		if err != nil {
			return "refused (" + netpolicy.ReasonOf(err) + ")"
		}
		return "opened"
	}
	for _, u := range []string{
		"http://0x7f.1:3000/",                       // 127.0.0.1, as Chromium parses it
		"http://[::ffff:a9fe:a9fe]/latest/",         // 169.254.169.254 inside IPv6
		"https://93.184.215.14/report?token=s3cr3t", // public, with a credential
		"https://93.184.215.14/",
		"javascript:alert(1)",
	} {
		v := cls.Classify(ctx, u, nil)
		netpolicy.MarkLiteral(&v)
		fmt.Printf("%s: %s; local: %s; remote: %s\n", u, v.Class,
			opened(pol.RefuseLiteral(v, route.Local)), opened(pol.RefuseLiteral(v, route.Cloud)))
	}

	v := cls.Classify(ctx, "http://169.254.169.254/", nil)
	err := pol.Refuse(v, route.Local)
	fmt.Println(errors.Is(err, netpolicy.ErrMetadata), err)
	// Output:
	// http://0x7f.1:3000/: private; local: opened; remote: refused (private_on_remote)
	// http://[::ffff:a9fe:a9fe]/latest/: metadata; local: refused (metadata); remote: refused (metadata)
	// https://93.184.215.14/report?token=s3cr3t: public; local: opened; remote: refused (secret_in_url)
	// https://93.184.215.14/: public; local: opened; remote: opened
	// javascript:alert(1): invalid; local: refused (scheme_not_allowed); remote: refused (scheme_not_allowed)
	// true hybroute: blocked (metadata): URL targets a cloud metadata endpoint: "http://169.254.169.254/"
}

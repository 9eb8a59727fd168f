package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hybroute/hybroute"
	"github.com/hybroute/hybroute/internal/redact"
	"github.com/hybroute/hybroute/redisstore"
)

// A server in a fleet: several replicas of `hybroute mcp` behind a load
// balancer share one Redis, where they keep one provider back-off window,
// one probe and one provider concurrency limit (docs/server.md). The
// Redis password comes from the URL or the environment, never from a
// config file's plain key.

// storePasswordEnv holds the Redis password when the --store URL has none.
const storePasswordEnv = "HYBROUTE_STORE_PASSWORD"

// fleetFlags are the flags of a server in a fleet.
type fleetFlags struct {
	store       string        // redis:// or rediss:// URL; "" is no shared store
	prefix      string        // redisstore.WithPrefix
	ca          string        // a PEM file of the CAs a rediss:// server's certificate is checked against
	timeout     time.Duration // hybroute.WithStoreTimeout
	concurrency int           // hybroute.WithProviderConcurrency
}

func (f *fleetFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.store, "store", "", "the Redis the replicas of a fleet share (one back-off window, one probe, one --provider-concurrency limit): "+
		"redis://[user@]host:port[/db], or rediss:// for TLS; the password in the URL or in $"+storePasswordEnv+" (unset: this process keeps its own)")
	fs.StringVar(&f.prefix, "store-prefix", "hybroute:", "with --store: the prefix of every key, so that several fleets can share one Redis")
	fs.StringVar(&f.ca, "store-ca", "", "with a rediss:// --store: a PEM file of the CAs its certificate is checked against (default: the system's)")
	fs.DurationVar(&f.timeout, "store-timeout", 500*time.Millisecond, "with --store: the bound on one call to Redis; past it the call is served from this process's own state")
	fs.IntVar(&f.concurrency, "provider-concurrency", 0, "the most cloud sessions open at once, across the fleet with --store (the provider plan's limit); past it new sessions run on the local Chromium (0: no limit)")
}

// options are the router's options the flags give, and what closes the
// store's client after the router.
func (f *fleetFlags) options(ctx context.Context, getenv func(string) string, stderr io.Writer) ([]hybroute.Option, func(), error) {
	var opts []hybroute.Option
	if f.concurrency < 0 {
		return nil, nil, fmt.Errorf("%w: --provider-concurrency %d: want 0 or more", errConfig, f.concurrency)
	}
	if f.concurrency > 0 {
		opts = append(opts, hybroute.WithProviderConcurrency(f.concurrency))
	}
	if f.store == "" {
		if f.ca != "" {
			return nil, nil, fmt.Errorf("%w: --store-ca needs --store", errConfig)
		}
		return opts, func() {}, nil
	}
	ro, err := f.redisOptions(getenv)
	if err != nil {
		return nil, nil, err
	}
	client := redis.NewClient(ro)
	// A store that does not answer never fails a call (the router serves
	// from its own state meanwhile), so the server starts anyway, saying so.
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := client.Ping(pctx).Err(); err != nil {
		fmt.Fprintf(stderr, "hybroute mcp: WARNING: the store %s does not answer (%s): each replica keeps its own state until it does\n",
			redact.URL(f.store), redact.FromURL(f.store).Scrub(err.Error()))
	}
	opts = append(opts, hybroute.WithStore(redisstore.New(client, redisstore.WithPrefix(f.prefix))),
		hybroute.WithStoreTimeout(f.timeout))
	return opts, func() { _ = client.Close() }, nil
}

// redisOptions reads the --store URL, with its password from the
// environment when it has none, and the CAs of --store-ca.
func (f *fleetFlags) redisOptions(getenv func(string) string) (*redis.Options, error) {
	if !strings.HasPrefix(f.store, "redis://") && !strings.HasPrefix(f.store, "rediss://") {
		return nil, fmt.Errorf("%w: --store %s: want a redis:// or rediss:// URL", errConfig, redact.URL(f.store))
	}
	ro, err := redis.ParseURL(f.store)
	if err != nil {
		return nil, fmt.Errorf("%w: --store %s: %s", errConfig, redact.URL(f.store), redact.FromURL(f.store).Scrub(err.Error()))
	}
	if ro.Password == "" {
		ro.Password = getenv(storePasswordEnv)
	}
	if f.ca != "" {
		if ro.TLSConfig == nil {
			return nil, fmt.Errorf("%w: --store-ca needs a rediss:// --store", errConfig)
		}
		pem, err := os.ReadFile(f.ca)
		if err != nil {
			return nil, fmt.Errorf("%w: --store-ca: %w", errConfig, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%w: --store-ca %s: no PEM certificate in it", errConfig, f.ca)
		}
		ro.TLSConfig.RootCAs = pool
	}
	if ro.TLSConfig != nil && ro.TLSConfig.MinVersion < tls.VersionTLS12 {
		ro.TLSConfig.MinVersion = tls.VersionTLS12
	}
	return ro, nil
}

// Package agenttests is a user's module: an agent's morning job, and its
// tests on hybroute's test kit, depending on hybroute as any user's module
// does (a require, no replace). In this repository it builds in workspace
// mode (go.work uses it).
package agenttests

import (
	"context"
	"fmt"

	"github.com/chromedp/chromedp"

	"github.com/hybroute/hybroute"
)

// MorningScreenshot is the agent's job: open the dashboard and take its
// screenshot, wherever the Router runs it.
func MorningScreenshot(ctx context.Context, r *hybroute.Router, dashboard string) ([]byte, hybroute.Result, error) {
	var png []byte
	res, err := r.Navigate(ctx, "morning", dashboard, func(ctx context.Context, _ *hybroute.Call) error {
		if err := chromedp.Do(ctx, chromedp.Navigate(dashboard)); err != nil {
			return err
		}
		var err error
		png, err = chromedp.Run(ctx, chromedp.CaptureScreenshot())
		return err
	})
	if err != nil {
		return nil, res, fmt.Errorf("morning screenshot: %w", err)
	}
	return png, res, nil
}

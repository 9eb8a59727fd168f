// Package sidecar runs the local Chromium: one warm process, started once
// however many sessions ask for it at the same time, and a new tab in a
// browser context of its own for each session, with a spare one made
// ahead. It owns the process's life (start, death, stop, the temp profile
// and every child), its flags, and the measure of its memory.
//
// It holds no rule about where a URL may go: the guard and the egress
// proxy of each process, which decide with the router's policy, and the
// turn to open a tab come from its [Config], with what it needs of the
// router's configuration.
package sidecar

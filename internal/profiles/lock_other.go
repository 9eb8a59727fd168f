//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package profiles

import (
	"errors"
	"os"
)

// lockProfileDir has no lock to take here, and a profile directory two
// routers could share is refused rather than risked.
func lockProfileDir(string) (*os.File, error) {
	return nil, errors.New("persistent profiles need flock, which this platform lacks")
}

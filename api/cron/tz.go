package cron

import (
	"fmt"
	"time"

	// The binary is static and edge machines often lack
	// /usr/share/zoneinfo: embed the zone database (about 450 kB) so
	// CronJob timeZone works everywhere.
	_ "time/tzdata"
)

// LoadLocation resolves a CronJob timeZone ("Europe/Berlin"); nil or ""
// is the server's local zone. The zone database is embedded, so this does
// not depend on the host's zoneinfo files.
func LoadLocation(name *string) (*time.Location, error) {
	if name == nil || *name == "" {
		return time.Local, nil
	}
	if *name == "Local" {
		return nil, fmt.Errorf("unknown time zone %q", *name)
	}
	loc, err := time.LoadLocation(*name)
	if err != nil {
		return nil, fmt.Errorf("unknown time zone %q: %w", *name, err)
	}
	return loc, nil
}

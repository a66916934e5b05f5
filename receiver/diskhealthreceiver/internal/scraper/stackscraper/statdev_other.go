//go:build !linux

package stackscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/stackscraper"

import "os"

// statDev lstats p; the device is not known here ("").
func statDev(p string) (string, error) {
	_, err := os.Lstat(p)
	return "", err
}

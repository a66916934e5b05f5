//go:build !race

package scrapertest

// RaceSlowdown widens CPU budgets under the race detector.
const RaceSlowdown = 1

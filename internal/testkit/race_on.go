//go:build race

package testkit

// RaceSlowdown widens CPU budgets under the race detector.
const RaceSlowdown = 5

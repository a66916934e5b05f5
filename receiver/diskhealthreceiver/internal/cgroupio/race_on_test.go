//go:build race

package cgroupio

// raceSlowdown widens time budgets under the race detector.
const raceSlowdown = 5

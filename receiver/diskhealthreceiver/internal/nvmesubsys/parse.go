package nvmesubsys

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

// State is a controller's state as nvme_sysfs_show_state writes it.
type State uint8

// The controller states. StateUnknown is the kernel's own "unknown state" (a state newer than its table).
const (
	StateNew State = iota
	StateLive
	StateResetting
	StateConnecting
	StateDeleting
	StateDeletingNoIO
	StateDead
	StateUnknown
	NumStates // the number of states
)

var stateWords = [NumStates]string{"new", "live", "resetting", "connecting", "deleting", "deleting (no IO)", "dead", "unknown state"}

// stateNames are attribute values: no space or parenthesis.
var stateNames = [NumStates]string{"new", "live", "resetting", "connecting", "deleting", "deleting_noio", "dead", "unknown"}

func (s State) String() string { return stateNames[s] }

// MarshalText writes the attribute value (goldens, logs).
func (s State) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Transport is a controller's transport (its ops' name).
type Transport uint8

// The transports; TransportOther is a name this table does not know (apple-nvme, a future one).
const (
	TransportPCIe Transport = iota
	TransportTCP
	TransportRDMA
	TransportFC
	TransportLoop
	TransportOther
	NumTransports // the number of transports
)

var transportNames = [NumTransports]string{"pcie", "tcp", "rdma", "fc", "loop", "other"}

func (t Transport) String() string { return transportNames[t] }

// MarshalText writes the attribute value (goldens, logs).
func (t Transport) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// ANAState is a path's Asymmetric Namespace Access state. ANANone: the controller reports no ANA, so the
// kernel treats every path of a live controller as optimized and shows no ana_state.
type ANAState uint8

// The ANA states (nvme_ana_state_names).
const (
	ANANone ANAState = iota
	ANAOptimized
	ANANonOptimized
	ANAInaccessible
	ANAPersistentLoss
	ANAChange
	NumANAStates // the number of ANA states
)

var anaWords = [NumANAStates]string{"", "optimized", "non-optimized", "inaccessible", "persistent-loss", "change"}

var anaNames = [NumANAStates]string{"none", "optimized", "non_optimized", "inaccessible", "persistent_loss", "change"}

func (a ANAState) String() string { return anaNames[a] }

// MarshalText writes the attribute value (goldens, logs).
func (a ANAState) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// errFormat is what a parser wraps when a file holds what the kernel never writes there.
var errFormat = errors.New("not what the kernel writes")

// line is b without its one trailing newline; an empty or multi-line value is refused.
func line(b []byte) ([]byte, error) {
	b = bytes.TrimSuffix(b, []byte("\n"))
	if len(b) == 0 || bytes.IndexByte(b, '\n') >= 0 {
		return nil, fmt.Errorf("%q: %w", clip(b), errFormat)
	}
	return b, nil
}

// ParseState parses a controller's state file.
func ParseState(b []byte) (State, error) {
	l, err := line(b)
	if err != nil {
		return StateUnknown, err
	}
	for i, w := range stateWords {
		if string(l) == w {
			return State(i), nil
		}
	}
	return StateUnknown, fmt.Errorf("controller state %q: %w", clip(l), errFormat)
}

// ParseTransport parses a controller's transport file. Any single word is a transport (the kernel
// adds them); one this table does not know is TransportOther.
func ParseTransport(b []byte) (Transport, error) {
	l, err := line(b)
	if err != nil {
		return TransportOther, err
	}
	for i, w := range transportNames[:TransportOther] {
		if string(l) == w {
			return Transport(i), nil
		}
	}
	if bytes.ContainsAny(l, " \t") {
		return TransportOther, fmt.Errorf("transport %q: %w", clip(l), errFormat)
	}
	return TransportOther, nil
}

// ParseANAState parses a path's ana_state file.
func ParseANAState(b []byte) (ANAState, error) {
	l, err := line(b)
	if err != nil {
		return ANANone, err
	}
	for i, w := range anaWords[1:] {
		if string(l) == w {
			return ANAState(i + 1), nil
		}
	}
	return ANANone, fmt.Errorf("ana_state %q: %w", clip(l), errFormat)
}

// ParseANAGroup parses a path's ana_grpid file: a 32-bit group ID (0 is reserved by the specification
// but the kernel prints it as it is).
func ParseANAGroup(b []byte) (uint32, error) {
	l, err := line(b)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseUint(string(l), 10, 32)
	if err != nil {
		return 0, fmt.Errorf("ana_grpid %q: %w", clip(l), errFormat)
	}
	return uint32(v), nil
}

// clip keeps an error's quote of garbage short.
func clip(b []byte) []byte {
	if len(b) > 64 {
		return b[:64]
	}
	return b
}

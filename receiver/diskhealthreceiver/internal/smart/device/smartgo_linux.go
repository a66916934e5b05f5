//go:build linux

package device

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	smartgo "github.com/anatol/smart.go"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/ata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/nvme"
)

// The reads github.com/anatol/smart.go covers go through it: ATA IDENTIFY,
// SMART READ DATA (with the attribute names of its drive table) and SMART
// READ THRESHOLDS, and the NVMe SMART / health log. Conn's allowlist no
// longer admits those commands, so the device layer cannot send them itself.
// Everything else stays on Conn (docs/smart-own-reads.md says why, read by
// read). Library is the seam: smart.go in production, devicetest's fakes
// (smart.go's own types decoded from the fixtures) in tests. This file is
// Linux's: smart.go does not build for macOS without cgo, and the ioctls are
// Linux's anyway (library_other.go).

// ATADevice is an ATA drive opened through the library.
type ATADevice interface {
	Identify() (*smartgo.AtaIdentifyDevice, error)
	ReadSMARTData() (*smartgo.AtaSmartPage, error)
	ReadSMARTThresholds() (*smartgo.AtaSmartThresholdsPage, error)
	Close() error
}

// NVMeDevice is an NVMe controller opened through the library.
type NVMeDevice interface {
	ReadSMART() (*smartgo.NvmeSMARTLog, error)
	Close() error
}

// Library opens devices for the reads smart.go does.
type Library interface {
	// OpenATA sends what smart.OpenSata sends (INQUIRY, IDENTIFY DEVICE) and
	// picks the attribute names for the drive's model and firmware.
	OpenATA(node string) (ATADevice, error)
	OpenNVMe(node string) (NVMeDevice, error)
}

// SmartGo is the Library of the receiver: github.com/anatol/smart.go.
type SmartGo struct{}

// OpenATA opens node with smart.OpenSata.
func (SmartGo) OpenATA(node string) (ATADevice, error) {
	d, err := smartgo.OpenSata(node)
	if err != nil {
		return nil, err // not d: a nil *SataDevice would be a non-nil ATADevice
	}
	return d, nil
}

// OpenNVMe opens node with smart.OpenNVMe.
func (SmartGo) OpenNVMe(node string) (NVMeDevice, error) {
	d, err := smartgo.OpenNVMe(node)
	if err != nil {
		return nil, err
	}
	return d, nil
}

func defaultLibrary() Library { return SmartGo{} }

// sgATA is an ATA drive opened through the library, its answers in the
// decoders' types; every call is a libCall.
type sgATA struct {
	dev  ATADevice
	disk string
}

func openATA(lib Library, disk, node string, deadline time.Time) (ataReads, error) {
	dev, err := libCall(disk, "smart.go OpenSata", deadline, func() (ATADevice, error) { return lib.OpenATA(node) })
	if err != nil {
		return nil, err
	}
	return &sgATA{dev: dev, disk: disk}, nil
}

func (a *sgATA) Close() error { return a.dev.Close() }

func (a *sgATA) Identify(deadline time.Time) (*ata.Identity, error) {
	raw, err := libCall(a.disk, "IDENTIFY DEVICE", deadline, a.dev.Identify)
	if err != nil {
		return nil, err
	}
	// The words smart.go's struct leaves out come back as zeros: the
	// extended sector count (230-233), TRIM (169), the checksum (255).
	return reencoded(raw, "IDENTIFY DEVICE", ata.ParseIdentify)
}

func (a *sgATA) SMARTData(deadline time.Time) (*ata.SMARTData, ata.Preset, error) {
	p, err := libCall(a.disk, "SMART READ DATA", deadline, a.dev.ReadSMARTData)
	if err != nil {
		return nil, ata.Preset{}, err
	}
	return smartDataOf(p), builtInPreset(p), nil
}

func (a *sgATA) Thresholds(deadline time.Time) (*ata.Thresholds, error) {
	p, err := libCall(a.disk, "SMART READ THRESHOLDS", deadline, a.dev.ReadSMARTThresholds)
	if err != nil {
		return nil, err
	}
	return thresholdsOf(p), nil
}

func readNVMeSMART(lib Library, disk, node string, deadline time.Time) (*nvme.SMARTLog, error) {
	log, err := libCall(disk, "NVMe Get Log Page 02h", deadline, func() (*smartgo.NvmeSMARTLog, error) {
		dev, err := lib.OpenNVMe(node)
		if err != nil {
			return nil, err
		}
		defer func() { _ = dev.Close() }()
		return dev.ReadSMART()
	})
	if err != nil {
		return nil, err
	}
	// Its reserved bytes come back as zeros; the decoder reads none of them.
	if *log == (smartgo.NvmeSMARTLog{}) {
		// smart.go drops the NVMe status the ioctl returns: a controller that refused the command
		// leaves the buffer as it was, all zeros. No drive that answers has a composite temperature
		// of 0 K and nothing else, so this page was never written; its zeros (0 % spare, no errors)
		// are no reading. A target that fills only some fields (Linux nvmet: the data units and
		// commands, a temperature of 0 K) is read with what it fills; 0 K is no temperature.
		return nil, &CommandError{Command: "NVMe Get Log Page 02h", Err: errEmptySMARTLog}
	}
	return reencoded(log, "SMART log", nvme.ParseSMARTLog)
}

// errEmptySMARTLog is a SMART / health log the controller did not fill.
var errEmptySMARTLog = errors.New("the controller returned no SMART / health log (every byte 0: the page was not written)")

// libCall runs one library call for disk: never once the read's deadline has
// passed (the call's own ioctl timeout is smart.go's, not ours, so the read's
// deadline is what stops further calls), and a panic inside the library (a
// short page, garbage from a drive) is this call's error, without a stack, so
// the same failure reads the same on every scrape and is logged once.
func libCall[T any](disk, call string, deadline time.Time, f func() (T, error)) (v T, err error) {
	if !time.Now().Before(deadline) {
		return v, &CommandError{Command: call, Err: ErrTimeout}
	}
	defer func() {
		if p := recover(); p != nil {
			var zero T
			v, err = zero, &CommandError{Command: call, Err: fmt.Errorf("smart.go panicked on %s's answer: %v", disk, p)}
		}
	}()
	v, err = f()
	if err != nil {
		return v, &CommandError{Command: call, Err: classifyErrno(err)}
	}
	return v, nil
}

// reencoded decodes one of smart.go's structs with the decoder used before
// smart.go: the struct is written back as the page it was read from (fields
// it leaves out as zeros) and parsed.
func reencoded[T, R any](v *T, what string, parse func([]byte) (R, error)) (R, error) {
	var b bytes.Buffer
	if err := binary.Write(&b, binary.LittleEndian, v); err != nil {
		var zero R
		return zero, fmt.Errorf("%s: %w", what, err)
	}
	r, err := parse(b.Bytes())
	if err != nil {
		return r, fmt.Errorf("%s: %w", what, err)
	}
	return r, nil
}

// smartDataOf turns smart.go's SMART data page into the decoder's, sorted by
// attribute ID (smart.go returns a map: the page order is lost). The
// reserved byte after the raw bytes is in ValueRaw only where smart.go's type
// reads 56 bits; elsewhere it is taken as 0.
func smartDataOf(p *smartgo.AtaSmartPage) *ata.SMARTData {
	d := &ata.SMARTData{Revision: p.Version, Attributes: make([]ata.RawAttribute, 0, len(p.Attrs))}
	for _, a := range p.Attrs {
		if a.Id == 0 {
			continue
		}
		ra := ata.RawAttribute{ID: a.Id, Flags: a.Flags, Value: a.Current, Worst: a.Worst, RawBytes: a.VendorBytes}
		switch a.Type {
		case smartgo.AtaDeviceAttributeTypeRaw56, smartgo.AtaDeviceAttributeTypeHex56,
			smartgo.AtaDeviceAttributeTypeRaw24DivRaw32, smartgo.AtaDeviceAttributeTypeMsec24Hour32:
			ra.Reserved = uint8(a.ValueRaw >> 48)
		}
		d.Attributes = append(d.Attributes, ra)
	}
	slices.SortFunc(d.Attributes, func(a, b ata.RawAttribute) int { return int(a.ID) - int(b.ID) })
	return d
}

// smartGoFormats maps smart.go's attribute types onto the decoder's formats
// (both are smartmontools' -v formats).
var smartGoFormats = map[int]ata.Format{
	smartgo.AtaDeviceAttributeTypeRaw8:          ata.FormatRaw8,
	smartgo.AtaDeviceAttributeTypeRaw16:         ata.FormatRaw16,
	smartgo.AtaDeviceAttributeTypeRaw48:         ata.FormatRaw48,
	smartgo.AtaDeviceAttributeTypeHex48:         ata.FormatHex48,
	smartgo.AtaDeviceAttributeTypeRaw56:         ata.FormatRaw56,
	smartgo.AtaDeviceAttributeTypeHex56:         ata.FormatHex56,
	smartgo.AtaDeviceAttributeTypeRaw64:         ata.FormatRaw64,
	smartgo.AtaDeviceAttributeTypeHex64:         ata.FormatHex64,
	smartgo.AtaDeviceAttributeTypeRaw16OptRaw16: ata.FormatRaw16OptRaw16,
	smartgo.AtaDeviceAttributeTypeRaw16OptAvg16: ata.FormatRaw16OptAvg16,
	smartgo.AtaDeviceAttributeTypeRaw24OptRaw8:  ata.FormatRaw24OptRaw8,
	smartgo.AtaDeviceAttributeTypeRaw24DivRaw24: ata.FormatRaw24DivRaw24,
	smartgo.AtaDeviceAttributeTypeRaw24DivRaw32: ata.FormatRaw24DivRaw32,
	smartgo.AtaDeviceAttributeTypeSec2Hour:      ata.FormatSec2Hour,
	smartgo.AtaDeviceAttributeTypeMin2Hour:      ata.FormatMin2Hour,
	smartgo.AtaDeviceAttributeTypeHalfMin2Hour:  ata.FormatHalfMin2Hour,
	smartgo.AtaDeviceAttributeTypeMsec24Hour32:  ata.FormatMsec24Hour32,
	smartgo.AtaDeviceAttributeTypeTempMinMax:    ata.FormatTempMinMax,
	smartgo.AtaDeviceAttributeTypeTemp10X:       ata.FormatTemp10X,
}

// builtInPreset is the preset of smart.go's names for this page: used when no
// drivedb.h could be read, as smartctl falls back to its built-in table. An
// attribute smart.go does not name (or types in a way this version does not
// know) stays Unknown_Attribute, raw48.
func builtInPreset(p *smartgo.AtaSmartPage) ata.Preset {
	defs := make(map[uint8]ata.AttrDef, len(p.Attrs))
	for id, a := range p.Attrs {
		f, ok := smartGoFormats[a.Type]
		if a.Name == "" || !ok {
			continue
		}
		defs[id] = ata.AttrDef{Name: a.Name, Format: f}
	}
	return ata.BuiltIn(defs)
}

// thresholdsOf is smart.go's thresholds page as the decoder's.
func thresholdsOf(p *smartgo.AtaSmartThresholdsPage) *ata.Thresholds {
	return ata.NewThresholds(p.Revnumber, p.Thresholds)
}

package scsi

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
)

// Capacity is READ CAPACITY(16) parameter data.
type Capacity struct {
	LastLBA   uint64
	BlockSize uint32
	// PhysicalExponent: 2^n logical blocks per physical block.
	PhysicalExponent uint8
	LowestAlignedLBA uint16
	// ThinProvisioned is LBPME (logical block provisioning management
	// enabled); ReadsZeros is LBPRZ.
	ThinProvisioned   bool
	ReadsZeros        bool
	ProtectionEnabled bool
}

// Blocks is the number of logical blocks (LastLBA+1, saturating).
func (c *Capacity) Blocks() uint64 {
	if c.LastLBA == math.MaxUint64 {
		return math.MaxUint64
	}
	return c.LastLBA + 1
}

// Bytes is the capacity in bytes, saturating at the largest uint64.
func (c *Capacity) Bytes() uint64 {
	hi, lo := bits.Mul64(c.Blocks(), uint64(c.BlockSize))
	if hi != 0 {
		return math.MaxUint64
	}
	return lo
}

// PhysicalBlockSize is the physical block size in bytes.
func (c *Capacity) PhysicalBlockSize() uint64 {
	return uint64(c.BlockSize) << c.PhysicalExponent
}

// ParseReadCapacity16 decodes READ CAPACITY(16) data: the first 12 bytes
// are required, the rest (exponent, provisioning) used when present.
func ParseReadCapacity16(b []byte) (*Capacity, error) {
	if len(b) < 12 {
		return nil, fmt.Errorf("read capacity(16): %d bytes, want at least 12", len(b))
	}
	c := &Capacity{
		LastLBA:   binary.BigEndian.Uint64(b),
		BlockSize: binary.BigEndian.Uint32(b[8:]),
	}
	if c.BlockSize == 0 {
		return nil, fmt.Errorf("read capacity(16): block length 0")
	}
	if len(b) >= 16 {
		c.ProtectionEnabled = b[12]&1 != 0
		c.PhysicalExponent = b[13] & 0x0F
		c.ThinProvisioned = b[14]&0x80 != 0
		c.ReadsZeros = b[14]&0x40 != 0
		c.LowestAlignedLBA = binary.BigEndian.Uint16(b[14:]) & 0x3FFF
	}
	return c, nil
}

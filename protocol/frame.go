// Package protocol implements Ferry's wire protocol: native-messaging frames, JSON-RPC
// 2.0 messages in both directions, and the chunking of host→browser messages that are
// larger than Chrome accepts in one frame. PROTOCOL.md beside this file is the contract.
package protocol

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

const (
	// MaxInboundFrame is the largest frame the browser may send to a native host.
	MaxInboundFrame = 64 << 20
	// MaxOutboundFrame is the largest frame Chrome accepts from a host; one byte more
	// and it closes the whole port.
	MaxOutboundFrame = 1 << 20
)

var (
	// ErrTruncatedHeader reports a stream that ended inside a frame's length prefix.
	ErrTruncatedHeader = errors.New("frame truncated: stream ended inside the 4-byte length")
	// ErrTruncatedBody reports a stream that ended before the declared length was read.
	ErrTruncatedBody = errors.New("frame truncated: stream ended before the declared length")
	// ErrEmptyFrame reports a zero length prefix; no JSON message is empty.
	ErrEmptyFrame = errors.New("frame with zero length")
)

// FrameSizeError reports a declared length above the limit. It is returned before any
// of the body is read or allocated.
type FrameSizeError struct {
	Length, Limit uint32
}

func (e *FrameSizeError) Error() string {
	return fmt.Sprintf("frame length %d exceeds the %d-byte limit", e.Length, e.Limit)
}

// ReadFrame reads one frame. It returns io.EOF only when the stream ended cleanly
// between frames; any partial frame is ErrTruncatedHeader or ErrTruncatedBody.
func ReadFrame(r io.Reader, limit uint32) ([]byte, error) {
	var hdr [4]byte
	if n, err := io.ReadFull(r, hdr[:]); err != nil {
		if err == io.EOF && n == 0 {
			return nil, io.EOF
		}
		if err == io.ErrUnexpectedEOF {
			return nil, ErrTruncatedHeader
		}
		return nil, err
	}
	length := binary.NativeEndian.Uint32(hdr[:])
	if length == 0 {
		return nil, ErrEmptyFrame
	}
	if length > limit {
		return nil, &FrameSizeError{Length: length, Limit: limit}
	}
	// A peer can declare 64 MiB and send nothing; growing with the bytes that really
	// arrive keeps memory proportional to input rather than to the claim.
	if length <= MaxOutboundFrame {
		buf := make([]byte, length)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, truncated(err)
		}
		return buf, nil
	}
	var buf bytes.Buffer
	buf.Grow(MaxOutboundFrame)
	n, err := buf.ReadFrom(io.LimitReader(r, int64(length)))
	if err != nil {
		return nil, truncated(err)
	}
	if n < int64(length) {
		return nil, ErrTruncatedBody
	}
	return buf.Bytes(), nil
}

func truncated(err error) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return ErrTruncatedBody
	}
	return err
}

// AppendFrame appends the length prefix and payload to dst, so that a frame goes out in
// one write.
func AppendFrame(dst, payload []byte) []byte {
	dst = binary.NativeEndian.AppendUint32(dst, uint32(len(payload)))
	return append(dst, payload...)
}

// WriteFrame writes one frame with a single Write call.
func WriteFrame(w io.Writer, payload []byte) error {
	_, err := w.Write(AppendFrame(make([]byte, 0, 4+len(payload)), payload))
	return err
}

// putFrameHeader writes the length prefix into the first four bytes of f, which the
// message after them was built behind: a frame built that way goes out without
// being copied once more.
func putFrameHeader(f []byte) {
	binary.NativeEndian.PutUint32(f, uint32(len(f)-frameHeader))
}

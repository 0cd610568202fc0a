package linkdevice

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// errLineTooLong ends a session whose peer sent a line over the limit.
var errLineTooLong = errors.New("a line exceeds the size limit")

// lineReader reads newline-terminated lines of at most max bytes (the
// newline and a CR before it not counted). It never holds more than max
// bytes of one line: an oversized line is refused while it is read, not
// after.
type lineReader struct {
	r   *bufio.Reader
	max int
	buf []byte
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// next returns the next line without its terminator. The slice is valid
// until the next call. At the end of input it returns io.EOF; a final line
// without a newline is returned first. Empty lines are skipped.
func (l *lineReader) next() ([]byte, error) {
	for {
		line, err := l.read()
		if err != nil {
			return nil, err
		}
		if len(line) > 0 {
			return line, nil
		}
	}
}

func (l *lineReader) read() ([]byte, error) {
	l.buf = l.buf[:0]
	for {
		frag, err := l.r.ReadSlice('\n')
		if len(l.buf)+len(frag) > l.max+2 { // room for "\r\n"
			return nil, errLineTooLong
		}
		l.buf = append(l.buf, frag...)
		switch {
		case err == nil:
			line := bytes.TrimSuffix(bytes.TrimSuffix(l.buf, []byte("\n")), []byte("\r"))
			if len(line) > l.max {
				return nil, errLineTooLong
			}
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if len(l.buf) == 0 {
				return nil, io.EOF
			}
			line := bytes.TrimSuffix(l.buf, []byte("\r"))
			if len(line) > l.max {
				return nil, errLineTooLong
			}
			return line, nil
		default:
			return nil, err
		}
	}
}

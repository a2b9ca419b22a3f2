package cuda

import "errors"

// errClosed is returned by calls on a closed device.
var errClosed = errors.New("device is closed")

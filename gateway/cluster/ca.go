package cluster

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"

	"github.com/toolsearch/toolsearch/internal/safefile"
)

// maxCABytes bounds the CA file read: a bundle of a few hundred
// certificates is well under it.
const maxCABytes = 4 << 20

// loadCA reads a PEM file of CA certificates into a pool. A file with no
// certificate in it, or with a block that is not a certificate, is an
// error naming the file, never a pool that trusts nothing.
func loadCA(path string) (*x509.CertPool, error) {
	data, err := safefile.ReadFile(path, maxCABytes)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	n := 0
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("%s: a PEM %q block where only certificates belong", path, block.Type)
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%s: certificate %d: %w", path, n+1, err)
		}
		pool.AddCert(cert)
		n++
	}
	if n == 0 {
		return nil, fmt.Errorf("%s: no PEM certificate in it", path)
	}
	return pool, nil
}

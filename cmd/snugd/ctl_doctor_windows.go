package main

import "io/fs"

// fileOwner returns "": on Windows the ACL, not an owner uid, decides.
func fileOwner(fs.FileInfo) string { return "" }

"""Small local HTTP servers that follow the documented answers of the systems lakehook starts runs on."""

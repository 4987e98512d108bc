#![no_main]
quakecap_fuzz::target!(q3_datagrams);

#![no_main]
quakecap_fuzz::target!(qw_datagrams);

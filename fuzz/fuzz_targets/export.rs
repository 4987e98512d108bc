#![no_main]
quakecap_fuzz::target!(export);

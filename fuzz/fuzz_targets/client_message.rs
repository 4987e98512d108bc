#![no_main]
quakecap_fuzz::target!(client_message);

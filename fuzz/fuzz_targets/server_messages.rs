#![no_main]
quakecap_fuzz::target!(server_messages);

# placeholder: the install rules are being written
